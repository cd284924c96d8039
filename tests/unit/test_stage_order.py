"""One source for the stage order: :data:`tasks.pipeline.PIPELINE`.  ``StageName`` (what
``attempts.stage`` may hold), the README and ``docs/overview.md`` are checked against it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from schemas.records import NOT_A_STAGE, StageName
from tasks.pipeline import PIPELINE

ROOT = Path(__file__).parents[2]


def _listed(text: str, lead: str) -> tuple[str, ...]:
    """The code spans of the parenthesised list that follows ``lead`` in ``text``."""
    start = text.index(lead) + len(lead)
    inside = text[start:text.index(")", start)]
    return tuple(re.findall(r"`([a-z_]+)`", inside))


def test_stage_name_is_the_pipeline_order_and_the_other_places_a_candidate_stops():
    names = get_args(StageName)
    assert tuple(n for n in names if n not in NOT_A_STAGE) == PIPELINE.names
    assert set(NOT_A_STAGE) <= set(names)


def test_readme_and_overview_list_the_pipeline_order():
    readme = (ROOT / "README.md").read_text()
    overview = (ROOT / "docs" / "overview.md").read_text()
    assert _listed(readme, "runs the stages in the one order `tasks/pipeline.py` declares (") \
        == PIPELINE.names
    assert _listed(overview, "the one stage order (") == PIPELINE.names


def test_a_missing_stage_in_a_document_is_found():
    text = "the one stage order (`sandbox`, `execute`, `verify`), checked"
    assert _listed(text, "the one stage order (") != PIPELINE.names
