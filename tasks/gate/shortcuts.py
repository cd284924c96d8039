"""Shortcuts: the cheap tricks a verifier must not reward (pure; nothing runs).  The
``empty`` and ``literals`` controls of :mod:`tasks.gate.controls` apply them.

A shortcut fakes the task's outputs instead of doing the work:

- ``empty``: every expected output exists but is empty;
- ``literals``: every expected output holds only the instruction's literals (its
  Markdown code spans), and the answer is tried as each literal in turn and as all of
  them together.

Outputs are grouped by probe key (one table, branch or ticket may have entries in several
probe sections).  Entries of a ``files`` section are workspace files and are written
directly; other sections need the ecosystem's ``shortcuts`` hooks — ``empty(key,
expected)`` and ``fill(key, expected, literals)``, where ``expected`` maps section to
the expected value, returning a shell command (or None when the ecosystem has no way to
fake that output, which is then left untouched).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from environments.ecosystems import Ecosystem
from schemas.verifier import Check
from tasks.rules.markdown import code_spans


def literals(instruction: str) -> list[str]:
    """The instruction's code spans, each once, in order of appearance."""
    return list(dict.fromkeys(code_spans(instruction)))


@dataclass
class Shortcut:
    """What to do to the initial state: files to write, then one shell script."""

    files: dict[str, bytes] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    answers: list[str] | None = None
    """Answer texts to try in turn (the verifier's ``--answers``); None: no answer check."""

    @property
    def script(self) -> str:
        return "set -e\n" + "\n".join(self.commands) + "\n" if self.commands else ""


def _outputs(checks: list[Check]) -> dict[str, dict[str, object]]:
    """Probe key -> {section: expected value}, for the state checks that expect content."""
    grouped: dict[str, dict[str, object]] = {}
    for c in checks:
        if c.kind == "state" and c.compare != "absent":
            grouped.setdefault(c.key, {})[c.section] = c.expected
    return grouped


def shortcut(eco: Ecosystem, checks: list[Check], kind: str, instruction: str) -> Shortcut:
    """The ``empty`` or ``literals`` shortcut for a task's checks."""
    lits = literals(instruction)
    text = "\n".join(lits) + "\n" if kind == "literals" and lits else ""
    out = Shortcut()
    for key, expected in _outputs(checks).items():
        command = None
        if kind == "empty" and eco.shortcut_hooks:
            command = eco.shortcut_hooks.empty(key, expected)
        elif eco.shortcut_hooks:
            command = eco.shortcut_hooks.fill(key, expected, lits)
        if command:
            out.commands.append(command)
        elif "files" in expected:
            out.files[key] = text.encode()
    for c in checks:
        if c.kind == "answer":
            out.files[c.key] = text.encode()
            out.answers = [text] + (lits if kind == "literals" else [])
    return out
