"""Purposeless compositions, measured from the shards for ``taskfactory stats``.

Each detector looks at one accepted task (its ``trace_json`` and ``checks_json``) and says
whether the task does work no one would ask for.  They re-measure what planning and
execution are meant to prevent (``tasks/plan/planner.py`` uses each tool once per task;
``tasks/execute/purpose.py`` rejects steps that copy or undo), independently of that code:

- ``repeated tool``: a tool runs twice in one task;
- ``identical outputs``: two write steps wrote entries equal to each other (their
  ``StepTrace.digest``, the entry under its section's compare mode);
- ``output equals input``: a write step's entry equals one of its inputs, or one of the
  inputs of an earlier step that wrote the same entry (a new branch made from another,
  then moved back onto it): an earlier step's output, or a seeded entry the task leaves
  alone (its digest is in the ``unchanged`` checks);
- ``JSON through a line tool``: a step reads a ``.json`` file and writes line-oriented
  text (``head``, ``sort`` or ``grep`` over JSON);
- ``mixed sources joined``: a step with two or more file inputs whose sources (the seeded
  files they derive from, followed back through the steps that wrote them) are of
  different kinds (file extensions), such as a log concatenated with a CSV;
- ``unrelated extra (fix)``: a fix task with a step that neither is a repair step nor
  uses, directly or through other steps, what a repair step made, or that is no read the
  fault names as its report (``faults.injectors[].report``: a count of the repaired
  table's rows in some city asks about what the symptom never mentioned) (needs the graph;
  the reports of built-ins only);
- ``alias consumed``: a step takes the output of an earlier step whose tool declares it an
  alias (``returns.alias``: a new tag on a commit is that commit), so the earlier step was
  made only to point at what it points at (needs the ecosystem's specs: built-ins only).

Steps whose effect a later step undoes or overwrites (a field of a record set twice) are
rejected during execution from the probe states around each step
(:mod:`tasks.execute.purpose`); the shards keep no such states, so the accepted tasks have
no detector for them.  :func:`caught_rows` counts, per pattern, the candidates execution
caught with one (a purposeless step repaired or rejected), from the attempts.

Tasks written before steps carried digests count as not measured for the two digest
detectors.  Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field

import duckdb

from environments.ecosystems import Ecosystem, builtin_named
from tasks.dataset.query import stream_rows

DETECTORS = ("repeated tool", "identical outputs", "output equals input",
             "JSON through a line tool", "mixed sources joined", "unrelated extra (fix)",
             "alias consumed")
DIGESTS = ("identical outputs", "output equals input")
"""Detectors that need ``StepTrace.digest`` (absent from older tasks)."""
_PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*\.[A-Za-z0-9]+$")


def _is_path(value: object) -> bool:
    return isinstance(value, str) and "/" in value and bool(_PATH.match(value))


def _kind(path: str) -> str:
    return posixpath.splitext(path)[1].lower()


def _lines(output_type: str) -> bool:
    """Line-oriented text (``file.text`` before the text types were split)."""
    return output_type == "file.text" or output_type.startswith("file.text.lines")


def _unrelated_to_fix(graph: dict, repairs: int, report: frozenset[str] | None) -> bool:
    """A step of a fix graph that is no repair step (its first ``repairs``) and uses
    nothing a repair step made, directly or through other steps, or is no tool of
    ``report`` (the fault's reports; None: any)."""
    related: set[str] = set()
    for n, step in enumerate(graph.get("steps", [])):
        ups = {b.get("step") for b in step.get("bind", {}).values() if b.get("kind") == "step"}
        if n < repairs or (ups & related and (report is None or step.get("tool") in report)):
            related.add(step["id"])
        else:
            return True
    return False


def findings(trace: dict, checks: list[dict], graph: dict | None = None,
             repairs: int = 0, aliases: frozenset[str] = frozenset(),
             report: frozenset[str] | None = None,
             new: frozenset[tuple[str, str]] = frozenset()) -> set[str]:
    """The detectors that flag one task (its trace and checks, as stored; a fix task's
    graph, the number of its repair steps and the reads its fault names as reports; the
    tools whose output is an alias; the (tool, parameter) pairs that name a new entry,
    which are no input of their step)."""
    steps = trace.get("steps", [])
    found: set[str] = set()
    if graph is not None and graph.get("fault") and _unrelated_to_fix(graph, repairs, report):
        found.add("unrelated extra (fix)")
    tools = [st["tool"] for st in steps]
    if len(tools) != len(set(tools)):
        found.add("repeated tool")
    seeded = {key: d for c in checks if c.get("kind") == "unchanged"
              for key, d in (c.get("expected") or {}).items()}
    pointers = {st.get("output") for st in steps if st["tool"] in aliases}
    if any(v in pointers and v != st.get("output") for st in steps
           for v in st["args"].values()):
        found.add("alias consumed")
    written: dict[str, str] = {}  # output (path, table, ...) -> digest
    source: dict[str, set[str]] = {}  # output path -> kinds of the seeded files behind it
    made_from: dict[str, list[str]] = defaultdict(list)  # output -> inputs of its writers
    for st in steps:
        out = st.get("output")
        inputs = [v for k, v in st["args"].items() if v != out and (st["tool"], k) not in new]
        paths = [v for v in inputs if _is_path(v)]
        kinds = [source.get(p, {_kind(p)}) for p in paths]
        if len(paths) >= 2 and len(set().union(*kinds)) > 1:
            found.add("mixed sources joined")
        if any(_kind(p) == ".json" for p in paths) and _lines(st.get("output_type", "")):
            found.add("JSON through a line tool")
        digest = st.get("digest")
        if digest is None or not isinstance(out, str):
            continue
        if digest in written.values():
            found.add("identical outputs")
        if any(written.get(v, seeded.get(v)) == digest for v in inputs + made_from[out]):
            found.add("output equals input")
        written[out] = digest
        made_from[out] += inputs
        if _is_path(out):
            source[out] = set().union(*kinds) if kinds else {_kind(out)}
    return found


@dataclass
class Tally:
    tasks: int = 0
    with_digests: int = 0
    flagged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DETECTORS, 0))


def composition_tallies(con: duckdb.DuckDBPyConnection) -> dict[str, Tally]:
    """Per ecosystem (and ``all``), the tasks and how many each detector flags."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    ecosystems: dict[str, Ecosystem | None] = {}
    for eco, trace_json, checks_json, graph_json in stream_rows(
            con, "select ecosystem, trace_json, checks_json, graph_json from tasks"):
        trace, checks, graph = json.loads(trace_json), json.loads(checks_json), \
            json.loads(graph_json)
        has_digests = any(st.get("digest") for st in trace.get("steps", []))
        repairs, report = _fix(ecosystems, eco, graph.get("fault"))
        flags = findings(trace, checks, graph, repairs, _aliases(ecosystems, eco), report,
                         _new(ecosystems, eco))
        for key in (eco, "all"):
            t = tallies[key]
            t.tasks += 1
            t.with_digests += has_digests
            for name in flags:
                t.flagged[name] += 1
    return dict(tallies)


def _builtin(ecosystems: dict[str, Ecosystem | None], name: str) -> Ecosystem | None:
    """Built-in ecosystem ``name``, loaded once (None for a user's)."""
    if name not in ecosystems:
        ecosystems[name] = builtin_named(name)
    return ecosystems[name]


def _aliases(ecosystems: dict[str, Ecosystem | None], name: str) -> frozenset[str]:
    """The tools of built-in ecosystem ``name`` whose output is an alias."""
    eco = _builtin(ecosystems, name)
    return frozenset(t.name for t in eco.spec.tools if t.returns.alias) if eco else frozenset()


def _new(ecosystems: dict[str, Ecosystem | None], name: str) -> frozenset[tuple[str, str]]:
    """The (tool, parameter) pairs of built-in ecosystem ``name`` that name a new entry."""
    eco = _builtin(ecosystems, name)
    return frozenset((t.name, p.name) for t in eco.spec.tools for p in t.params
                     if t.names_new_entry(p.name)) if eco else frozenset()


def _fix(ecosystems: dict[str, Ecosystem | None], name: str, fault: str | None
         ) -> tuple[int, frozenset[str] | None]:
    """How many repair steps ``fault`` of built-in ecosystem ``name`` has (0 for a build
    task; 1, the first step, for a user's ecosystem or an unknown fault), and the reads it
    names as reports (None: any)."""
    if not fault:
        return 0, None
    eco = _builtin(ecosystems, name)
    try:
        spec = eco.spec.fault(fault) if eco is not None else None
    except KeyError:
        spec = None
    if spec is None:
        return 1, None
    return len(spec.repair), None if spec.report is None else frozenset(spec.report)


COLUMNS = ["ecosystem", "tasks", *DETECTORS]
NOTE = ("Accepted tasks flagged by each detector of purposeless work (a tool run twice, two "
        "outputs equal, an output equal to its input, JSON through a line tool, files of "
        "different kinds joined, a fix task with work unrelated to its repair, a step taking "
        "an alias the task made, such as a new tag); the digest detectors count only tasks "
        "whose steps carry digests.  Steps undone or overwritten by a later step are "
        "rejected during execution, from the probe states: the second table counts the "
        "candidates caught with each pattern (a purposeless step repaired or rejected).")
PATTERNS = {"changes nothing": "it changes nothing", "undone": "as it was before step",
            "overwritten": "it overwrites the", "copy of an input or output": " equals ",
            "answer without its last write": "whose result only reads use",
            "answer beside its change": "whose entry it reads",
            "fix report without the repair": "the answer is the same without the repair"}
"""Per pattern execution rejects as ``execute/purposeless``, the words its detail holds
(:mod:`tasks.execute.purpose`, ``Run._check_answer_shows_work``)."""
CAUGHT_COLUMNS = ["ecosystem", "candidates", *PATTERNS]


def caught_rows(con: duckdb.DuckDBPyConnection) -> list[list[object]]:
    """Per ecosystem (``all`` last): its candidates and, per :data:`PATTERNS`, how many had
    a purposeless step of that pattern repaired or were rejected for one."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * (1 + len(PATTERNS)))
    for eco, reason, detail, repairs in stream_rows(
            con, "select ecosystem, reason, detail, repairs from attempts"):
        said = [r for r in repairs or [] if " purposeless: " in r]
        said += [detail or ""] if reason == "purposeless" else []
        for key in (eco, "all"):
            c = counts[key]
            c[0] += 1
            for n, words in enumerate(PATTERNS.values(), start=1):
                c[n] += any(words in s for s in said)
    return [[eco, *c] for eco, c in sorted(counts.items(), key=lambda kv: (kv[0] == "all",
                                                                          kv[0]))]


def composition_rows(con: duckdb.DuckDBPyConnection) -> list[list[object]]:
    """Per ecosystem (``all`` last): its tasks and each detector's rate (:data:`COLUMNS`)."""
    tallies = composition_tallies(con)
    rows = []
    for eco in sorted(tallies, key=lambda e: (e == "all", e)):
        t = tallies[eco]
        row: list[object] = [eco, t.tasks]
        for name in DETECTORS:
            base = t.with_digests if name in DIGESTS else t.tasks
            row.append(f"{100 * t.flagged[name] / base:.1f}%" if base else "-")
        rows.append(row)
    return rows
