"""Fault injectors of the ``files`` ecosystem: ``plant(files, seed)`` returns the seed
files with one realistic defect in them (ecosystem.yaml, ``faults``).

Each defect is one a repair tool of the ecosystem removes exactly: the repaired file is
byte for byte the seeded one, so a fix task's verifier can hold the agent's repair to the
healthy state.  The seeded CSV exports have unique rows, no BOM and no short rows; the
text files use Unix line endings and the JSON configuration parses, so each defect is the
only one of its kind in the workspace.
"""

from __future__ import annotations

import csv
import io
import random

Files = dict[str, bytes]


def _rng(name: str, seed: int) -> random.Random:
    return random.Random(f"fault:{name}:{seed}")


def _pick(files: Files, rng: random.Random, prefix: str, suffixes: tuple[str, ...]) -> str:
    paths = sorted(p for p in files if p.startswith(prefix) and p.endswith(suffixes))
    if not paths:
        raise LookupError(f"no {'/'.join(suffixes)} file under {prefix}")
    return rng.choice(paths)


def _rows(text: str) -> tuple[str, list[str]]:
    lines = text.splitlines(keepends=True)
    if len(lines) < 4:
        raise LookupError("the csv has too few rows")
    return lines[0], lines[1:]


def duplicate_rows(files: Files, seed: int) -> Files:
    """Two to four data rows of one CSV export appear a second time, each somewhere after
    its first occurrence (a re-run export appended to, or merged twice)."""
    rng = _rng("duplicate_rows", seed)
    path = _pick(files, rng, "data/", (".csv",))
    header, rows = _rows(files[path].decode())
    for i in sorted(rng.sample(range(len(rows)), min(len(rows), rng.randint(2, 4))),
                    reverse=True):
        rows.insert(rng.randint(i + 1, len(rows)), rows[i])
    return {**files, path: (header + "".join(rows)).encode()}


def truncate_rows(files: Files, seed: int) -> Files:
    """One or two rows cut short (fewer fields than the header) inserted into one CSV
    export, as an interrupted write leaves them."""
    rng = _rng("truncate_rows", seed)
    path = _pick(files, rng, "data/", (".csv",))
    header, rows = _rows(files[path].decode())
    width = len(next(csv.reader([header])))
    for _ in range(rng.randint(1, 2)):
        fields = next(csv.reader([rng.choice(rows)]))
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(fields[:rng.randint(1, width - 1)])
        rows.insert(rng.randint(0, len(rows)), out.getvalue())
    return {**files, path: (header + "".join(rows)).encode()}


def crlf_endings(files: Files, seed: int) -> Files:
    """One log or notes file saved with Windows line endings."""
    rng = _rng("crlf_endings", seed)
    path = rng.choice(sorted(p for p in files if p.endswith((".log", ".txt"))))
    return {**files, path: files[path].replace(b"\n", b"\r\n")}


def trailing_comma(files: Files, seed: int) -> Files:
    """A comma after the last field of a JSON configuration file: it no longer parses."""
    rng = _rng("trailing_comma", seed)
    path = _pick(files, rng, "config/", (".json",))
    text = files[path].decode()
    end = text.rstrip().rfind("\n}")
    if end < 0:
        raise LookupError(f"{path} does not end in a closing brace on its own line")
    return {**files, path: (text[:end] + "," + text[end:]).encode()}


def byte_order_mark(files: Files, seed: int) -> Files:
    """One CSV export re-saved with a UTF-8 byte order mark in front of its header."""
    rng = _rng("byte_order_mark", seed)
    path = _pick(files, rng, "data/", (".csv",))
    return {**files, path: b"\xef\xbb\xbf" + files[path]}
