"""Query results on stdout, written batch by batch as DuckDB hands them over: a result
of any length streams in memory bounded by one batch.

- ``table``: aligned columns, cells cut at ``max_width``; the widths come from the first
  batch (a later, wider cell widens its own line only), then a ``(N rows)`` line;
- ``csv``: a header, then one line per row (``\\n`` line ends);
- ``json``: JSON Lines, one object per row, each line valid JSON: NaN and infinities are
  ``null`` (JSON has no such numbers), and a column name that repeats gets DuckDB's
  suffix (``a``, ``a_1``, ``a_2``) instead of overwriting the first; values JSON cannot
  hold (dates, decimals, bytes) are their text.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

Batches = Iterable[list[tuple]]


def write_rows(columns: list[str], batches: Batches, fmt: str, out: TextIO,
               max_width: int = 60) -> int:
    """Write the result to ``out`` in ``fmt`` (``table``, ``csv``, ``json``); the rows
    written."""
    if fmt == "json":
        return _json(columns, batches, out)
    if fmt == "csv":
        return _csv(columns, batches, out)
    return _table(columns, batches, out, max_width)


def distinct_names(columns: list[str]) -> list[str]:
    """``columns`` with a repeated name suffixed as DuckDB does: ``a, a`` -> ``a, a_1``."""
    taken: set[str] = set()
    names = []
    for name in columns:
        base, n = name, 0
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        names.append(name)
    return names


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json(columns: list[str], batches: Batches, out: TextIO) -> int:
    names, n = distinct_names(columns), 0
    for rows in batches:
        for row in rows:
            out.write(json.dumps(dict(zip(names, _finite(row), strict=True)), default=str,
                                 allow_nan=False) + "\n")
        n += len(rows)
    return n


def _csv(columns: list[str], batches: Batches, out: TextIO) -> int:
    writer = csv.writer(out, lineterminator="\n")  # not the module's default CRLF
    writer.writerow(columns)
    n = 0
    for rows in batches:
        writer.writerows(rows)
        n += len(rows)
    return n


def _table(columns: list[str], batches: Batches, out: TextIO, max_width: int) -> int:
    def cell(v: object) -> str:
        s = "NULL" if v is None else str(v).replace("\n", "\\n")
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    def line(values: list[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True))

    stream: Iterator[list[tuple]] = iter(batches)
    first = [[cell(v) for v in r] for r in next(stream, [])]
    widths = [max([len(c)] + [len(r[i]) for r in first]) for i, c in enumerate(columns)]
    out.write(line(columns) + "\n" + "-+-".join("-" * w for w in widths) + "\n")
    n = 0
    for cells in itertools.chain([first], ([[cell(v) for v in r] for r in rows]
                                           for rows in stream)):
        out.writelines(line(r) + "\n" for r in cells)
        n += len(cells)
    out.write(f"({n} row{'s' if n != 1 else ''})\n")
    return n
