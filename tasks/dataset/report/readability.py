"""Readability of a dataset's instructions, for ``taskfactory stats`` and the card.

Per ecosystem and kind (and over all tasks), the figures of
:func:`tasks.rules.readability.figures`: the longest sentence per instruction (median,
p90, max), the share with a sentence over the word limit, the deepest nesting of
descriptions and the share repeating a 6-word sequence outside code spans, beside the
limits the ``instruct`` stage enforces and the dataset-wide targets.  For a user's
ecosystem the rows say which of its intents read badly.  Streams the instructions (one
figure set per row kept); imports neither Prefect nor Docker.
"""

from __future__ import annotations

from collections import defaultdict

import duckdb

from tasks.dataset.query import stream_rows
from tasks.rules.readability import MAX_NESTING, MAX_WORDS, Readability, readability, summary

COLUMNS = ["ecosystem", "kind", "tasks", "longest median", "longest p90", "longest max",
           f"over {MAX_WORDS} words", "deepest nesting", "repeated 6-gram"]
NOTE = (f"Words of the longest sentence of each instruction (a code span is one word); "
        f"the share of instructions with a sentence over {MAX_WORDS} words (the instruct "
        f"stage rejects them as `instruct/unreadable`, as it does a nesting over "
        f"{MAX_NESTING}); the deepest nesting of descriptions (0: at most one description in "
        "a clause; 1: one inside another); the share of instructions repeating a 6-word "
        "sequence outside code spans.  Targets over a dataset: median at most 22, p90 at "
        "most 32, at most 2% over the limit, at most 20% repeating.")


def readability_rows(con: duckdb.DuckDBPyConnection) -> list[list[object]]:
    """Per ecosystem and kind (``all`` last), the figures as :data:`COLUMNS` lists."""
    groups: dict[tuple[str, str], list[Readability]] = defaultdict(list)
    for eco, kind, text in stream_rows(
            con, "select ecosystem, coalesce(kind, 'build'), instruction from tasks"):
        found = readability(text)
        groups[(eco, kind)].append(found)
        groups[("all", "")].append(found)
    rows = []
    for (eco, kind) in sorted(groups, key=lambda k: (k[0] == "all", k)):
        f = summary(groups[(eco, kind)])
        rows.append([eco, kind, f.instructions, f.median, f.p90, f.max,
                     f"{100 * f.over:.1f}%", f.nesting, f"{100 * f.repeated:.1f}%"])
    return rows
