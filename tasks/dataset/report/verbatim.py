"""Arguments given verbatim, for ``taskfactory stats``.

An argument of an executed step is *verbatim* when the instruction holds its value as the
whole content of a code span: the solver is handed it rather than finding it out (a goal
instruction names an intermediate result, a looked-up value or a described entry by what
it is).  Per ecosystem and kind (and over all tasks), pooled over the tasks' arguments:
the share of all arguments verbatim, and the share of the *inputs* verbatim, the arguments
that name something the workspace already holds or a choice among its values (not a new
entry's fresh name nor new content such as a title or message, which only the instruction
can give).  A user's ecosystem, whose tool specs the report does not load, counts every
argument an input.  Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
from collections import defaultdict

import duckdb

from environments.ecosystems import Ecosystem, builtin_named
from tasks.dataset.query import stream_rows
from tasks.rules.markdown import code_spans

LIMIT = 0.5
"""Target over a dataset: at most half the arguments verbatim."""
COLUMNS = ["ecosystem", "kind", "tasks", "arguments", "verbatim %", "inputs",
           "inputs verbatim %"]
NOTE = ("Arguments of the executed steps whose value the instruction writes as a code span "
        "(handed to the solver rather than found out), pooled over the tasks' arguments; "
        "inputs are the arguments that are not a new entry's name or new content (a title, "
        f"a message), which only the instruction can give.  Target over a dataset: at most "
        f"{100 * LIMIT:.0f}% of the inputs verbatim.")


def _is_new(eco: Ecosystem | None, tool: str, param: str) -> bool:
    """Does argument ``param`` of ``tool`` name a new entry or new content?"""
    try:
        p = eco.spec.tool(tool).param(param) if eco is not None else None
    except (KeyError, StopIteration):  # a tool or parameter the spec no longer has
        return False
    return p is not None and (p.fresh is not None
                              or (p.sample is not None and p.sample.draws == "new"))


def verbatim(eco: Ecosystem | None, trace: dict, instruction: str) -> tuple[int, int, int, int]:
    """Of one task: (arguments, verbatim, inputs, inputs verbatim), an argument verbatim
    when its value is a code span of ``instruction``."""
    spans = set(code_spans(instruction))
    out = [0, 0, 0, 0]
    for st in trace.get("steps", []):
        for name, value in st.get("args", {}).items():
            given = str(value) in spans
            out[0], out[1] = out[0] + 1, out[1] + given
            if not _is_new(eco, st["tool"], name):
                out[2], out[3] = out[2] + 1, out[3] + given
    return out[0], out[1], out[2], out[3]


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def verbatim_rows(con: duckdb.DuckDBPyConnection) -> list[list[object]]:
    """Per ecosystem and kind (``all`` last), :data:`COLUMNS`."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    ecosystems: dict[str, Ecosystem | None] = {}
    for name, kind, trace_json, text in stream_rows(
            con, "select ecosystem, coalesce(kind, 'build'), trace_json, instruction "
                 "from tasks"):
        if name not in ecosystems:
            ecosystems[name] = builtin_named(name)
        found = verbatim(ecosystems[name], json.loads(trace_json), text)
        for key in ((name, kind), ("all", "")):
            c = counts[key]
            c[:] = [c[0] + 1, *(a + b for a, b in zip(c[1:], found, strict=True))]
    return [[eco, kind, n, args, _share(given, args), inputs, _share(known, inputs)]
            for (eco, kind), (n, args, given, inputs, known)
            in sorted(counts.items(), key=lambda kv: (kv[0][0] == "all", kv[0]))]
