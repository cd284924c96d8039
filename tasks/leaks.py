"""Leaked answers: a task must not hand the solver its own answer.

A task that ends in an answer is rejected as ``instruct/leaked_answer`` when that answer
(the final read's expected text, trimmed) can be read off its instruction, in any style:

- it is, or occurs as a whole token in, one of the instruction's code spans (its
  literals) — ``ticket `12` moved to team `growth``` leaks the answer ``growth``;
- or it occurs as a whole token in the text of an item line (what the instruction asks
  for: the target and its description), outside code spans too.

Matching is by whole token, as grounding matches (:func:`tasks.grounding.appears`): a
value that begins or ends with a word character must not continue a longer word or a
dotted one there, so the short answers that matter most (``0``, ``1``, ``yes``) match
only as themselves: ``1`` is not found in ```10```, ``v1``, ``1.5`` or ``out_1.txt``.
Matching ignores case (``Open`` leaks ``open``).  A numeric answer also leaks through
any number token of the same value (``26`` leaks ``26.0``).  The opener, closer, context
paragraph and list numbering are fixed wording that does not depend on the task's
values, so they are not searched (``1.`` in a numbered list leaks nothing).  Multi-line
answers are matched whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from tasks.failures import StageFailure
from tasks.grounding import appears
from tasks.markdown import code_spans

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


class Line(Protocol):
    """An instruction line (``tasks.instruct.Item``)."""

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


def check_not_leaked(answer: str | None, text: str, items: Sequence[Line]) -> None:
    """Raise ``instruct/leaked_answer`` when the instruction shows the task's answer."""
    where = leaked_in(answer or "", text, items)
    if where is not None:
        shown = answer.strip() if answer else ""
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise StageFailure("instruct", "leaked_answer",
                           f"the answer {shown!r} shows in {where}")
