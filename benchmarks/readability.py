"""Readability of instructions: a dataset's beside published human-written ones.

Counts, with the counter the ``instruct`` stage and ``taskfactory stats`` use
(:mod:`tasks.rules.readability`), every instruction of each dataset (``--data``, per
ecosystem and kind and over all) and every ``instruction.md`` under each folder of
``--instructions`` (a benchmark's task folders, such as Terminal-Bench 2's), and prints
the same figures for both: the longest sentence per instruction (median, p90, max), the
share over 40 words, the deepest nesting of descriptions and the share repeating a
6-word sequence outside code spans.

    .venv/bin/python benchmarks/readability.py --data data \\
        --instructions path/to/terminal-bench-2/tasks
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tasks.dataset.query import connect
from tasks.dataset.report.readability import COLUMNS, readability_rows
from tasks.dataset.report.stats import md_table
from tasks.rules.readability import figures


def folder_row(folder: Path) -> list[object]:
    """The figures of every ``instruction.md`` under ``folder`` (as a :data:`COLUMNS` row)."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.rglob("instruction.md"))]
    f = figures(texts)
    return [folder.name, "published", f.instructions, f.median, f.p90, f.max,
            f"{100 * f.over:.1f}%", f.nesting, f"{100 * f.repeated:.1f}%"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append", default=[],
                        help="a dataset folder (repeatable)")
    parser.add_argument("--instructions", type=Path, action="append", default=[],
                        help="a folder of task folders holding instruction.md (repeatable)")
    args = parser.parse_args(argv)
    if not args.data and not args.instructions:
        parser.error("give --data DIR or --instructions DIR")
    for folder in [*args.data, *args.instructions]:
        if not folder.is_dir():
            print(f"readability: {folder} is not a folder; give an existing one",
                  file=sys.stderr)
            return 2
    for data in args.data:
        print(f"## {data}\n\n{md_table(COLUMNS, readability_rows(connect(data)))}\n")
    if args.instructions:
        rows = [folder_row(f) for f in args.instructions]
        print(f"## published instructions\n\n{md_table(COLUMNS, rows)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
