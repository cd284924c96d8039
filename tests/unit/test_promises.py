"""Every promise is a check, every check a promise: each phrase of the instruction
templates and of the built-in tools' intents that constrains the result is walked here and
shown its check, and the near miss that proves the check exists (``tasks/gate/near_miss.py``,
run on every accepted task by the gate).  docs/gate.md, "Promises are checks", has the table
of phrases, checks and near misses.
"""

from __future__ import annotations

import random

import pytest

from environments.ecosystems import Ecosystem, load_ecosystem
from schemas.ecosystem import ToolSpec
from schemas.verifier import Check
from tasks.gate.near_miss import near_misses
from tasks.instruct.instruction import PHRASES, answer_format
from tasks.verify.verifier import ANSWER_COMPARE

BUILTINS = ["files", "sql", "git", "service"]
ORDERED = ("in their original order", "in their order", "sorted", "in row order",
           "in path order", "in increasing order", "ordered by", "followed by", "in order",
           "in table order", "otherwise unchanged", "otherwise the same")
"""Phrases that promise an order of rows or lines (or the whole content, order with it)."""
COLUMN_ORDER = ("same names, same order", "in the header's order", "in the table's column order",
                "in table order", "in order")
KEEPS = ("unchanged", "as they are", "as it is", "nothing else", "do not touch",
         "do not alter", "do not modify", "no other changes", "untouched", "stay as",
         "nothing that already exists", "change nothing", "leave everything",
         "nothing outside", "only the listed steps", "nothing that exists should change")
"""Phrases of a closer that promise the existing entries stay as they are."""


def _tools(name: str) -> list[tuple[Ecosystem, ToolSpec]]:
    eco = load_ecosystem(name)
    return [(eco, t) for t in eco.spec.tools]


ALL = [pair for name in BUILTINS for pair in _tools(name)]


def _intent(tool: ToolSpec) -> str:
    return " ".join(tool.intent.split())


@pytest.mark.parametrize("eco,tool", [(e, t) for e, t in ALL
                                      if t.returns.compare in ("csv", "text")],
                         ids=lambda x: getattr(x, "name", ""))
def test_an_output_compared_in_order_promises_its_order(eco, tool):
    assert any(p in _intent(tool) for p in ORDERED), (eco.name, tool.name, tool.intent)


@pytest.mark.parametrize("eco,tool", [(e, t) for e, t in ALL
                                      if t.returns.compare == "csv_unordered"],
                         ids=lambda x: getattr(x, "name", ""))
def test_a_csv_compared_as_a_multiset_says_any_order_and_promises_its_header(eco, tool):
    intent = _intent(tool)
    assert "in any order" in intent, (tool.name, intent)
    assert "header" in intent and any(p in intent for p in COLUMN_ORDER), (tool.name, intent)


@pytest.mark.parametrize("eco,tool", [(e, t) for e, t in ALL if t.effect == "read"
                                      and t.returns.parser == "lines"],
                         ids=lambda x: getattr(x, "name", ""))
def test_an_answer_of_several_lines_promises_their_order(eco, tool):
    assert any(p in _intent(tool) for p in ORDERED), (eco.name, tool.name, tool.intent)


@pytest.mark.parametrize("tool", [t for e, t in ALL if e.name == "sql" and t.effect == "write"
                                  and _intent(t).startswith(("a new table", "a new view"))],
                         ids=lambda t: t.name)
def test_a_table_a_tool_creates_promises_its_column_order(tool):
    intent = _intent(tool)
    assert any(p in intent for p in COLUMN_ORDER), (tool.name, intent)


def test_the_sql_probe_lists_a_tables_columns_in_order():
    """The check behind the column-order phrases: the schema entry is an ordered list."""
    probe = load_ecosystem("sql").probe_source
    assert '"columns": columns}' in probe and "sorted(columns)" not in probe


@pytest.mark.parametrize("parser", sorted(PHRASES["answer_formats"]))
def test_each_answer_format_has_the_check_of_its_parser(parser):
    compare = ANSWER_COMPARE.get(parser, "text")
    check = Check(kind="answer", key="answer.txt", expected="12\n13" if parser in (
        "lines", "csv") else "12", compare=compare)
    misses = near_misses(load_ecosystem("files"), [check])
    if compare == "json":  # JSON compares by value: no format to miss
        assert misses == []
        return
    assert [m.check for m in misses] == ["answer.txt"], (parser, misses)
    phrase = answer_format(parser, random.Random(0))
    assert phrase in PHRASES["answer_formats"][parser]


@pytest.mark.parametrize("style", ["goal", "spec", "step"])
def test_every_closer_promises_the_existing_entries_stay(style):
    for key, closer in PHRASES[style]["closers"].items():
        assert any(p in closer.lower() for p in KEEPS), (style, key, closer)
    for key, closer in PHRASES["open_closers"].items():  # no `unchanged` checks: no promise
        assert not any(p in closer.lower() for p in KEEPS), (key, closer)


@pytest.mark.parametrize("name", BUILTINS)
def test_a_shared_section_is_said_and_has_its_near_miss(name):
    spec = load_ecosystem(name).spec
    shared = sorted(n for n, s in spec.probe_sections.items() if s.shared)
    if not shared:
        assert spec.shared_note == ""
        return
    assert spec.shared_note.strip().endswith(".") and len(spec.shared_note.split()) <= 25
    assert all(spec.probe_sections[n].extra for n in shared)
    only = [Check(kind="only", section=n, key=n, expected=[]) for n in shared]
    assert {m.check for m in near_misses(load_ecosystem(name), only)} == {
        f"{n}/{n}" for n in shared}
