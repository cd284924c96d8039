"""The near-miss control's changes: after the reference solution, small changes that each
break exactly one promise the instruction makes (pure; nothing runs here).

A sound verifier fails a solution that does almost what was asked.  Each
:class:`NearMiss` is a shell command run in the workspace after the reference, the
promise it breaks (``the row order of `out.csv```) and the check that must catch it
(``files/out.csv``, as the verifier names its failing checks).  They run together in one
solution; the control passes only when the verifier fails and names every targeted check
among its failures (:func:`uncaught`), so one promise cannot hide behind another.

Near misses come from:

- each shared probe section (``ProbeSection.extra``): one entry nobody asked for, which
  the section's ``only`` check must fail;
- each delivered file the task compares in order (``csv``: its data rows; ``text``: its
  lines) reversed, and each CSV compared with its header in a given order
  (``csv_unordered``) with its first two columns swapped — when that changes it;
- the ecosystem's shortcuts module's ``near_misses(key, expected)``, for entries of other
  sections (sql: a table's or view's columns in reverse order);
- the answer in a near format, by its parser: an integer written as a decimal, a number
  with a word after it, a text in quotes, lines in reverse order (or joined on one line).

A reconstruct task's program runs them at its end, on the workspace it is given: there
only the near misses that do not depend on a case's content apply (the shared sections'
extra entries, the answer's format), since the hidden cases' content is the verifier's.
"""

from __future__ import annotations

import csv
import io
import shlex
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.verifier import Check

FILES = "files"
RESHAPE = r'''import csv, io, sys
op, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
lines = text.splitlines()
if op == "reverse_rows":
    out = lines[:1] + lines[:0:-1]
elif op == "reverse_lines":
    out = lines[::-1]
elif op == "swap_columns":
    rows = list(csv.reader(io.StringIO(text)))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([r[1:2] + r[:1] + r[2:] for r in rows])
    out = buf.getvalue().splitlines()
elif op == "decimal":
    out = [lines[0].strip() + ".0"]
elif op == "unit":
    out = [lines[0].strip() + " in total"]
elif op == "quote":
    out = ['"' + lines[0].strip() + '"']
elif op == "join":
    out = [", ".join(l.strip() for l in lines if l.strip())]
open(path, "w", encoding="utf-8").write("\n".join(out) + "\n")
'''
"""Rewrites a file in place for one near miss (``python3 -c RESHAPE OP PATH``)."""


@dataclass(frozen=True)
class NearMiss:
    """One near miss: the promise it breaks, the check that must catch it, its command."""

    promise: str
    check: str
    command: str

    def __str__(self) -> str:
        return self.promise


def _reshape(op: str, path: str) -> str:
    return f"python3 -c {shlex.quote(RESHAPE)} {op} {shlex.quote(path)}"


def _rows(text: str) -> list[list[str]]:
    return [r for r in csv.reader(io.StringIO(text)) if r]


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _file_miss(c: Check) -> NearMiss | None:
    """The near miss of a delivered file compared in order (or with a header order)."""
    text, name = c.expected, f"{c.section}/{c.key}"
    if not isinstance(text, str):
        return None
    if c.compare == "csv" and len({tuple(r) for r in _rows(text)[1:]}) > 1:
        return NearMiss(f"the row order of `{c.key}`", name, _reshape("reverse_rows", c.key))
    if c.compare == "text" and len(set(_lines(text))) > 1:
        return NearMiss(f"the line order of `{c.key}`", name, _reshape("reverse_lines", c.key))
    header = (_rows(text) or [[]])[0]
    if c.compare == "csv_unordered" and len(header) > 1 and header[0] != header[1]:
        return NearMiss(f"the column order of `{c.key}`'s header", name,
                        _reshape("swap_columns", c.key))
    return None


def _answer_miss(c: Check, static: bool) -> NearMiss | None:
    """The answer in a near format (with ``static``, only the formats that do not depend
    on the answer's content)."""
    want = str(c.expected).strip()
    lines = _lines(want)
    if c.compare == "int":
        return NearMiss("the answer as a plain integer", c.key, _reshape("decimal", c.key))
    if c.compare == "number":
        return NearMiss("the answer as a bare number", c.key, _reshape("unit", c.key))
    if c.compare == "text":
        return NearMiss("the answer exactly as it is", c.key, _reshape("quote", c.key))
    if c.compare == "lines" and not static and len(lines) > 1:
        op = "reverse_lines" if lines != lines[::-1] else "join"
        promise = "the answer's line order" if op == "reverse_lines" else "one per line"
        return NearMiss(promise, c.key, _reshape(op, c.key))
    return None


def _extras(eco: Ecosystem) -> list[NearMiss]:
    return [NearMiss(f"no new {name} entry nobody asked for", f"{name}/{name}",
                     f"{conf.extra[0]} || true")
            for name, conf in sorted(eco.spec.probe_sections.items())
            if conf.shared and conf.checked and conf.extra]


def _hooked(eco: Ecosystem, checks: list[Check]) -> list[NearMiss]:
    """The ecosystem's own near misses of the delivered entries of non-file sections."""
    hook = getattr(eco.shortcut_hooks, "near_misses", None)
    if hook is None:
        return []
    grouped: dict[str, dict[str, object]] = {}
    for c in checks:
        if c.kind == "state" and c.compare != "absent" and c.section != FILES:
            grouped.setdefault(c.key, {})[c.section] = c.expected
    return [NearMiss(promise, f"{section}/{key}", f"{command} || true")
            for key, expected in sorted(grouped.items())
            for section, promise, command in hook(key, expected)]


def near_misses(eco: Ecosystem, checks: list[Check], static: bool = False) -> list[NearMiss]:
    """Every near miss of a task with ``checks``; with ``static`` (a reconstruct task's
    program, run on cases it does not know), only those that do not depend on content."""
    found: list[NearMiss | None] = list(_extras(eco))
    for c in checks:
        if c.kind == "answer":
            found.append(_answer_miss(c, static))
        elif c.kind == "state" and c.section == FILES and not static:
            found.append(_file_miss(c))
    found += [] if static else _hooked(eco, checks)
    return [m for m in found if m is not None]


def uncaught(misses: list[NearMiss], failed: tuple[str, ...]) -> list[NearMiss]:
    """The near misses whose check is not among the verifier's ``failed`` ones (a
    reconstruct verifier's names carry their case: ``case-c:files/out.csv``)."""
    names = {name.split(":", 1)[1] if ":" in name.split("/", 1)[0] else name
             for name in failed}
    return [m for m in misses if m.check not in names]
