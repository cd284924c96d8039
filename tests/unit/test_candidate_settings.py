"""A setting the stages read is declared once, in :class:`CandidateSettings`: its ``run``
flag, its place in every candidate's settings and in the config hash all follow from the
field.  Each test runs over every field, so a new one is covered without an edit here."""

from __future__ import annotations

from typing import Literal, get_args, get_origin

import pytest

from flows.cli import build_parser
from flows.commands.run import _settings
from flows.settings import RunSettings
from tasks.dataset.provenance import Built, Planned, config_hash
from tasks.stages.settings import CandidateSettings

FIELDS = list(CandidateSettings.model_fields.items())


def _other(spec) -> object:
    """A value of the field other than its default."""
    if spec.annotation is bool:
        return not spec.default
    if get_origin(spec.annotation) is Literal:
        return next(v for v in get_args(spec.annotation) if v != spec.default)
    return spec.default + 1


def _argv(name: str, value: object) -> list[str]:
    flag = f"--{name.replace('_', '-')}"
    return [flag] if value is True else [flag, str(value)]


@pytest.mark.parametrize(("name", "spec"), FIELDS, ids=[n for n, _ in FIELDS])
def test_each_field_is_a_run_flag_whose_value_reaches_the_candidate(name, spec, tmp_path):
    value = _other(spec)
    args = build_parser().parse_args(["run", "--data", str(tmp_path), "--ecosystem", "files",
                                      *_argv(name, value)])
    settings = _settings(args)
    assert getattr(settings.candidate(), name) == value
    untouched = _settings(build_parser().parse_args(["run", "--data", str(tmp_path)]))
    assert getattr(untouched.candidate(), name) == spec.default


@pytest.mark.parametrize(("name", "spec"), FIELDS, ids=[n for n, _ in FIELDS])
def test_each_field_changes_the_config_hash(name, spec):
    def chash(candidate: CandidateSettings) -> str:
        return config_hash(Built({"files": "d"}, {"files": None}, "docker"),
                           Planned(0, {1: 1.0}), candidate, (None, None), "p")

    assert chash(CandidateSettings(**{name: _other(spec)})) != chash(CandidateSettings())


def test_the_candidate_slice_is_frozen_and_holds_only_candidate_fields():
    settings = RunSettings(tasks=3, strict=True).candidate()
    assert type(settings) is CandidateSettings and settings.strict
    assert set(settings.model_dump()) == set(CandidateSettings.model_fields)
    with pytest.raises(ValueError, match="frozen"):
        settings.strict = False  # type: ignore[misc]
