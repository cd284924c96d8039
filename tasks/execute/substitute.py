"""Type-compatible replacements for a failing step (pure; nothing runs here).

A replacement tool has the failing tool's effect, returns a value of the failing tool's
return type (or a narrower one, so every consumer of the step still accepts it), and can
bind each typed input: first to what the failing step was bound to (an upstream output
or a state value, by type), else to another state value of a compatible type that the
graph does not use (not when the step feeds a tool that needs related inputs).  Sampled
inputs are drawn at execution time; fresh outputs get new names.  A tool that changes a
value in place replaces a step only when that value is an upstream step's output (never
a seeded value other steps may read); tools that need related inputs, fault repair
tools and tools the graph already uses are never replacements.  A lookup (one observed
value) is replaced only by a lookup, and a plain read only by a plain read.  In a fix
graph a step that builds on an earlier step's output is replaced only by one that builds
on it too, and a fix's report only by another of the fault's ``report`` tools where it
names them: a replacement reading something else would be an errand unrelated to the
fault.  A graph that serves a scenario is repaired with that scenario's tools only: a tool
from another line of work would make the task's story say one thing and its steps another.
"""

from __future__ import annotations

import random

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec, binds, type_satisfies
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import StepTrace
from tasks.plan.shapes import fresh_name, in_place


def _bind(tool: ToolSpec, pool: list[tuple[str, str | None, Binding]],
          spare: list[tuple[str, str]], taken: set[str]) -> dict[str, Binding] | None:
    """Bindings of ``tool``'s inputs: typed ones from ``pool`` (type, compare mode of an
    output or None, binding), then from ``spare`` state values (value, type); None when a
    typed input cannot be bound."""
    bind: dict[str, Binding] = {}
    pool, spare = list(pool), list(spare)
    for p in tool.params:
        if p.sample is not None:
            bind[p.name] = Binding(kind="sample", facet=p.sample.facet, of=p.sample.of)
        elif p.fresh is not None:
            name = fresh_name(p.fresh, taken)
            taken.add(name)
            bind[p.name] = Binding(kind="literal", value=name)
        else:
            fits = [i for i, (t, compare, _) in enumerate(pool) if binds(p, t, compare)]
            if fits:
                bind[p.name] = pool.pop(fits[0])[2]
                continue
            state = [i for i, (_, t) in enumerate(spare) if type_satisfies(t, p.type)]
            if not state:
                return None
            bind[p.name] = Binding(kind="state", value=spare.pop(state[0])[0])
    return bind


def _feeds_related(eco: Ecosystem, graph: WorkflowGraph, step: Step) -> bool:
    """A tool that needs related inputs takes ``step``'s output: a replacement must read
    what ``step`` read (another state value would break the relation)."""
    return any(eco.spec.tool(s.tool).related_inputs and any(
        b.kind == "step" and b.step == step.id for b in s.bind.values()) for s in graph.steps)


def substitutes(eco: Ecosystem, candidate: Candidate, graph: WorkflowGraph,
                done: list[StepTrace], files: dict[str, bytes], step: Step) -> list[Step]:
    """Replacements for ``step``, in a seeded order (same candidate, same order)."""
    tool = eco.spec.tool(step.tool)
    outputs = {st.step_id: st for st in done}
    pool: list[tuple[str, str | None, Binding]] = []
    for b in step.bind.values():
        if b.kind == "step" and (up := outputs.get(str(b.step))):
            pool.append((up.output_type, eco.spec.tool(up.tool).returns.compare, b))
        elif b.kind == "state" and (t := eco.state_type(str(b.value))):
            pool.append((t, None, b))
    used = {b.value for s in graph.steps for b in s.bind.values() if b.kind == "state"}
    spare = [] if _feeds_related(eco, graph, step) else [
        (path, t) for path in sorted(files) if path not in used and (t := eco.state_type(path))]
    taken = {str(v) for st in done for v in st.args.values()} | set(files) | {
        str(b.value) for s in graph.steps for b in s.bind.values() if b.value}
    upstream = any(b.kind == "step" for b in step.bind.values())
    in_graph = {s.tool for s in graph.steps}  # a task uses each tool once (tasks/plan/planner.py)
    story = set(eco.spec.scenario(graph.scenario).tools) if graph.scenario else None
    report = eco.spec.fault(graph.fault).report if graph.fault else None
    if report is not None and tool.effect != "write" and not tool.repair:  # the fix's report
        story = set(report) if story is None else story & set(report)
    options = []
    for other in eco.spec.tools:
        if other.name in in_graph or other.repair or other.effect != tool.effect \
                or (story is not None and other.name not in story) \
                or other.related_inputs \
                or not type_satisfies(other.returns.type, tool.returns.type) \
                or other.observes_value != tool.observes_value:
            continue
        bind = _bind(other, pool, spare, set(taken))
        if bind is None or (in_place(other) and bind[str(other.returns.from_param)].kind
                            != "step") or (graph.fault and upstream and not any(
                                b.kind == "step" for b in bind.values())):
            continue
        options.append(Step(id=step.id, tool=other.name, bind=bind))
    random.Random(f"substitute:{candidate.seed}:{step.id}").shuffle(options)
    return options
