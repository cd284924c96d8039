"""docs/ecosystem-reference.md documents every field of ``ecosystem.yaml`` and every value
of its fixed choices, as ``schemas/ecosystem.py`` defines them: a field added to the
schema without a line in the reference fails here."""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Union, get_args, get_origin

from pydantic import BaseModel

from schemas.ecosystem import EcosystemSpec

REFERENCE = Path(__file__).parents[2] / "docs" / "ecosystem-reference.md"


def _models_and_literals(annotation: object) -> Iterator[object]:
    """The pydantic models and Literal types inside an annotation (lists, dicts, unions)."""
    origin = get_origin(annotation)
    if origin is Literal:
        yield annotation
    elif origin in (list, dict, Union, types.UnionType):
        for arg in get_args(annotation):
            yield from _models_and_literals(arg)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation


def field_paths(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted path, annotation) of every field, nested ones included: ``tools[].name``,
    ``probe_sections.<section>.strict``, ``tools[].params[].sample.with`` (aliases used)."""
    for name, info in model.model_fields.items():
        path = prefix + (info.alias or name)
        yield path, info.annotation
        origin = get_origin(info.annotation)
        inner = (f"{path}[]." if origin is list else f"{path}.<section>."
                 if origin is dict else f"{path}.")
        for found in _models_and_literals(info.annotation):
            if isinstance(found, type):
                yield from field_paths(found, inner)


def test_every_field_has_a_line() -> None:
    spans = set(re.findall(r"`([^`]+)`", REFERENCE.read_text()))
    paths = [path for path, _ in field_paths(EcosystemSpec)]
    assert len(paths) > 40 and "tools[].params[].sample.with" in paths
    assert [p for p in paths if p not in spans] == []


def test_every_fixed_choice_is_named() -> None:
    spans = set(re.findall(r"`([^`]+)`", REFERENCE.read_text()))
    values = {str(v) for _, annotation in field_paths(EcosystemSpec)
              for found in _models_and_literals(annotation) if not isinstance(found, type)
              for v in get_args(found)}
    assert {"docker", "local", "lines_unordered", "rows_unordered", "integer"} <= values
    assert sorted(values - spans) == []


def test_a_new_field_would_be_caught() -> None:
    class Grown(EcosystemSpec):
        extra_knob: int = 0

    assert "extra_knob" in [path for path, _ in field_paths(Grown)]
