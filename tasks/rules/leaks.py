"""Leaked answers: a task must not hand the solver its own answer.

A task that ends in an answer is rejected as ``instruct/leaked_answer`` when that answer
(the final read's expected text, trimmed) can be read off its instruction, in any style:

- it is, or occurs as a whole token in, one of the instruction's code spans (its
  literals) — ``ticket `12` moved to team `growth``` leaks the answer ``growth``;
- or it occurs as a whole token in the text of an item line (what the instruction asks
  for: the target and its description), outside code spans too.

Matching is by whole token, as grounding matches (:func:`tasks.rules.grounding.appears`): a
value that begins or ends with a word character must not continue a longer word or a
dotted one there, so the short answers that matter most (``0``, ``1``, ``yes``) match
only as themselves: ``1`` is not found in ```10```, ``v1``, ``1.5`` or ``out_1.txt``.
Matching ignores case (``Open`` leaks ``open``).  A numeric answer also leaks through
any number token of the same value (``26`` leaks ``26.0``).  The opener, closer, context
paragraph and list numbering are fixed wording that does not depend on the task's
values, so they are not searched (``1.`` in a numbered list leaks nothing).  Multi-line
answers are matched whole.

One item may also answer another: a text answer (with a letter, four characters or more)
equal to a value another item asks to be made, when the instruction alone determines that
value (its step reads nothing looked up, no literal of it is written as a description,
and half of the answer's words stand in the text) — the message of a tag the task
restores — is read off that item, shown or not (a git fix task restoring a tag with "the
message it had (Release and its version)" and asking for the subject of the commit it
tags, ``Release 0.2.0``).  A value the solver
must look up first (the email of a team's lead it assigns a ticket to) answers nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from schemas.ecosystem import EcosystemSpec
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.rules.deliverables import flow
from tasks.rules.grounding import appears
from tasks.rules.markdown import code_spans

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


class Line(Protocol):
    """An instruction line (``tasks.instruct.instruction.Item``)."""

    @property
    def target(self) -> str: ...
    @property
    def text(self) -> str: ...


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def leaked_in(answer: str, text: str, items: Sequence[Line]) -> str | None:
    """Where ``answer`` shows in an instruction (``text`` and its ``items``), described in
    a few words; None when it does not (or there is no answer)."""
    want = answer.strip()
    if not want:
        return None
    places = [(f"the code span `{s}`", s) for s in code_spans(text)]
    places += [(f"the line for {item.target}", f"{item.target} {item.text}")
               for item in items]
    value = _number(want)
    for where, place in places:
        if appears(want.lower(), [place.lower()]):
            return where
        if value is not None and any(_number(n) == value for n in _NUMBER.findall(place)):
            return where
    return None


def _leaves(value: object) -> list[str]:
    """Every text inside a checked value (dict values and list items, recursively)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, list):
        return [t for v in value for t in _leaves(v)]
    return [value] if isinstance(value, str) else []


def determined(spec: EcosystemSpec, graph: WorkflowGraph, trace: Trace,
               checks: Sequence[Check], described: set[str]) -> list[Check]:
    """The state checks of entries whose value the instruction alone determines: written by
    a step bound to no read step's output and none of whose literals is described."""
    steps = flow(spec, graph, trace, checks)
    keys = set()
    for i, st in enumerate(trace.steps):
        tool = spec.tool(st.tool)
        looked_up = any(spec.tool(trace.steps[u].tool).effect != "write"
                        for u in steps.ups[i].values())
        if tool.effect == "write" and tool.returns.from_param and not looked_up \
                and not described & {str(v) for v in st.args.values()}:
            keys.add(st.args[tool.returns.from_param])
    return [c for c in checks if c.kind == "state" and c.key in keys]


_WORD = re.compile(r"[\w.@-]+")


def answered_by(answer: str, checks: Sequence[Check], text: str) -> str | None:
    """The other item whose checked value is the answer (see the module doc), or None;
    ``checks``: those :func:`determined` keeps.  At least half of the answer's words must
    stand in the instruction ``text``: the value is read off what it says, not looked up."""
    want = answer.strip().lower()
    if len(want) < 4 or not any(ch.isalpha() for ch in want):
        return None
    words, said = _WORD.findall(want), set(_WORD.findall(text.lower()))
    if 2 * sum(w in said for w in words) < len(words):
        return None
    for c in checks:
        if c.kind == "state" and any(t.strip().lower() == want for t in _leaves(c.expected)):
            return f"the value asked of {c.section}/{c.key}"
    return None


def check_not_leaked(answer: str | None, text: str, items: Sequence[Line],
                     checks: Sequence[Check] = ()) -> None:
    """Raise ``instruct/leaked_answer`` when the instruction shows the task's answer, or
    another of its items asks for it (``checks``: the :func:`determined` ones)."""
    where = leaked_in(answer or "", text, items) or answered_by(answer or "", checks, text)
    if where is not None:
        shown = answer.strip() if answer else ""
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise StageFailure("instruct", "leaked_answer",
                           f"the answer {shown!r} shows in {where}")
