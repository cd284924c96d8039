"""Looked-up values: what a solver must find out before it can act.

A looked-up value is the output of a read step that a later step takes as a typed input
(the solver runs the read, or its own, and carries what it printed on).  The planner counts
them the way the dataset's statistics do (:func:`looked_up`), and bounds how many an
ecosystem's tools can give at all (:func:`lookup_capacity`): a graph uses each tool once,
and only a lookup (:attr:`schemas.ecosystem.ToolSpec.observes_value`) passes its value on,
so each looked-up value needs a lookup of its own and a typed input of another tool that
takes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec, binds
from schemas.graph import Step, WorkflowGraph


def _edges(graph: WorkflowGraph | Sequence[Step] | Mapping[str, Any]
           ) -> Iterable[tuple[str, str, list[str]]]:
    """(step id, tool, the steps its inputs are bound to) of a graph, a list of steps, or a
    graph as stored (``graph_json``)."""
    if isinstance(graph, Mapping):
        for s in graph.get("steps", []):
            yield s["id"], s["tool"], [b["step"] for b in s.get("bind", {}).values()
                                       if b.get("kind") == "step" and b.get("step")]
        return
    for step in graph.steps if isinstance(graph, WorkflowGraph) else graph:
        yield step.id, step.tool, [b.step for b in step.bind.values()
                                   if b.kind == "step" and b.step]


def looked_up(eco: Ecosystem, graph: WorkflowGraph | Sequence[Step] | Mapping[str, Any]
              ) -> int:
    """How many values of ``graph`` a read step prints and a later step takes (distinct
    read steps whose output some step is bound to)."""
    edges = list(_edges(graph))
    reads = {sid for sid, tool, _ in edges if eco.spec.tool(tool).effect == "read"}
    return len({u for _, _, ups in edges for u in ups if u in reads})


def _slots(tools: Sequence[ToolSpec], lookup: ToolSpec) -> list[tuple[str, str]]:
    """The (tool, typed input) pairs of other ``tools`` that can take ``lookup``'s value."""
    out = lookup.returns
    return [(t.name, p.name) for t in tools if t.name != lookup.name
            for p in t.params if p.typed and not out.alias and binds(p, out.type, out.compare)]


def lookup_capacity(eco: Ecosystem, names: Iterable[str] | None = None) -> int:
    """An upper bound on the looked-up values of one graph of ``eco``'s tools (those
    ``names``, a scenario's recipe, when given; never the faults' repair tools): the most
    lookups that can each feed a typed input of their own (a maximum bipartite matching
    of lookups to inputs that take their type)."""
    wanted = frozenset(names) if names is not None else None
    key = (eco.name, eco.digest, wanted)
    if key not in _CAPACITY:
        _CAPACITY[key] = _matching(eco, wanted)
    return _CAPACITY[key]


_CAPACITY: dict[tuple[str, str, frozenset[str] | None], int] = {}


def _matching(eco: Ecosystem, wanted: frozenset[str] | None) -> int:
    tools = [t for t in eco.spec.tools if not t.repair and (wanted is None or t.name in wanted)]
    taken: dict[tuple[str, str], str] = {}

    def place(lookup: ToolSpec, seen: set[tuple[str, str]]) -> bool:
        for slot in _slots(tools, lookup):
            if slot in seen:
                continue
            seen.add(slot)
            if slot not in taken or place(eco.spec.tool(taken[slot]), seen):
                taken[slot] = lookup.name
                return True
        return False

    return sum(place(t, set()) for t in tools if t.observes_value)


def lookup_gap(eco: Ecosystem, need: int) -> str | None:
    """Why no graph of ``eco`` has ``need`` looked-up values, naming its lookups and the
    inputs that take each one's value; None when its tools allow that many."""
    if lookup_capacity(eco) >= need:
        return None
    tools = [t for t in eco.spec.tools if not t.repair]
    found = []
    for t in (t for t in tools if t.observes_value):
        takers = sorted({name for name, _ in _slots(tools, t)})
        found.append(f"{t.name} ({t.returns.type}: taken by {', '.join(takers) or 'nothing'})")
    return (f"ecosystem {eco.name} gives at most {lookup_capacity(eco)} looked-up values per "
            f"graph, fewer than {need}: a graph uses each tool once, and its lookups are "
            f"{'; '.join(found) or 'none'}; add a lookup whose value another tool takes "
            "(docs/ecosystem-reference.md, Value outputs) or ask an easier --difficulty")
