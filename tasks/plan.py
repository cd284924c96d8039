"""Planning: seeded workflow graphs whose every input is satisfiable by construction.

Each candidate gets its own seed, derived from the run seed and its index.  The planner
builds the candidate's seeded state (pure Python), picks a target depth from a weighted
distribution and a shape, then assigns tools by semantic type:

- ``chain``: each step consumes the previous step's output;
- ``fan_out``: one step's output feeds two or three branches;
- ``fan_in``: independent branches feed one step with several typed inputs;
- ``diamond``: one output feeds two branches that a joining step brings together.

Typed inputs bind to an upstream output of a compatible type or to a state file of a
compatible type; content-dependent literals are ``sample`` bindings resolved at execution
time from what is really in the sandbox; new names are ``fresh`` literals.  A read tool
ends a graph (its output is the answer) unless it is a lookup (``observes_value``: one
typed value, such as a ticket id or a commit): a lookup may also start or sit inside a
graph when a later write takes its output, which execution passes on as the value the
lookup really printed.  Where lookups can start a graph, the planner starts with one
with probability :data:`LOOKUP_SHARE` (a fan-out or a diamond then branches from the
write that takes the looked-up value).  A graph uses each tool once, so branches grow
from a value two different tools can take.  A shape that the ecosystem's tools cannot
form falls back to a chain.  Duplicate fingerprints within a run are re-planned.

A candidate's kind, fault and scenario are drawn first (:mod:`tasks.mix`).  A scenario
limits the tools a graph grows with to its recipe and weighs them.  A fix graph starts
from a fault injector's planted defect (``WorkflowGraph.fault``): its first steps are the
injector's repair tools, whose sampled inputs find the defect at execution time, then a
short chain builds on the repaired state.  Repair tools appear nowhere else.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec, type_satisfies
from schemas.graph import Binding, Candidate, Step, TaskKind, WorkflowGraph
from tasks.layout import CASES_HIDDEN, CASES_PUBLIC, layout_shared
from tasks.mix import (
    DEFAULT_KINDS,
    OFF_SCENARIO_SHARE,
    draw_fault,
    draw_scenarios,
    draws_reconstruct,
    parse_weights,
    plantable,
)

MAX_REPLANS = 40
OUTSIDE_REPLANS = 15
"""Re-plans of a candidate, out of :data:`MAX_REPLANS`, that leave its scenarios."""
DEFAULT_DEPTH_WEIGHTS: dict[int, float] = {1: 1, 2: 2, 3: 3, 4: 3, 5: 2, 6: 2, 7: 1, 8: 1}
SHAPE_WEIGHTS = {"chain": 4, "fan_out": 2, "fan_in": 2, "diamond": 2}
LOOKUP_SHARE = 0.85
"""Chance that a graph starts with a lookup when one can start it."""
FIX_DEPTH_WEIGHTS: dict[int, float] = {2: 1, 3: 2, 4: 3, 5: 3, 6: 2}
"""Depths of a fix graph: its repair steps, then a short chain on the repaired state."""


class PlanningError(RuntimeError):
    """No satisfiable graph could be planned."""


@dataclass(frozen=True)
class PlanStats:
    planned: int
    duplicates_replanned: int


def candidate_seed(run_seed: int, index: int) -> int:
    digest = hashlib.sha256(f"taskfactory:{run_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def parse_depth_weights(text: str) -> dict[int, float]:
    """``"1:1,2:2,3:3"`` -> ``{1: 1.0, 2: 2.0, 3: 3.0}``; ValueError names what is wrong."""
    weights = parse_weights(text, "depth:weight pairs like 1:1,2:3")
    try:
        depths = {int(d): w for d, w in weights.items()}
    except ValueError:
        raise ValueError(f"expected depth:weight pairs like 1:1,2:3, got {text!r}") from None
    wrong = [d for d in depths if not 1 <= d <= 8]
    if wrong:
        raise ValueError(f"depth must be 1..8, got {wrong[0]}")
    return depths


def in_place(tool: ToolSpec) -> bool:
    """A write that changes an existing thing rather than creating a fresh one."""
    if tool.effect != "write" or not tool.returns.from_param or tool.creates:
        return False
    return tool.param(tool.returns.from_param).fresh is None


def consumes_observed(graph: WorkflowGraph, eco: Ecosystem) -> bool:
    """Some step takes as input the value a read step printed (an observed value)."""
    reads = {s.id for s in graph.steps if eco.spec.tool(s.tool).effect == "read"}
    return any(b.kind == "step" and b.step in reads for s in graph.steps for b in s.bind.values())


def fresh_name(template: str, taken: set[str]) -> str:
    """``template`` with ``{n}`` as "", "_2", "_3"... : the first name not in ``taken``."""
    n = 1
    while (name := template.replace("{n}", "" if n == 1 else f"_{n}")) in taken:
        n += 1
    return name


@dataclass
class _Builder:
    """Grows one graph; tracks types, names and which state values are read or changed."""

    eco: Ecosystem
    rng: random.Random
    state: dict[str, str]
    steps: list[Step] = field(default_factory=list)
    out_type: dict[str, str] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    read: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    usage: Counter[str] = field(default_factory=Counter)
    """How often each tool was used by the run so far (biases choices toward coverage)."""
    lookup: bool | None = None
    """Whether the graph starts with a lookup where one can start; None: drawn."""
    recipe: dict[str, float] | None = None
    """The scenario's tools and their weights; None outside any scenario (every tool,
    each weighing 1)."""

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools a graph may grow with: the scenario's (every tool outside one), but
        never the faults' repair tools, which only a fault's own repair steps use
        (:func:`_fix`)."""
        return [t for t in self.eco.spec.tools
                if not t.repair and (self.recipe is None or t.name in self.recipe)]

    def lookup_first(self) -> bool:
        """Start with a lookup (when one can start): as the candidate drew it, or with
        probability :data:`LOOKUP_SHARE`."""
        return self.rng.random() < LOOKUP_SHARE if self.lookup is None else self.lookup

    def weight(self, name: str) -> float:
        """How likely tool ``name`` is picked among others that fit: its weight in the
        scenario, less the more the run has used it."""
        return (self.recipe or {}).get(name, 1.0) / (1 + self.usage[name])

    def choices(self, tool: ToolSpec, pname: str, taken: frozenset[str] = frozenset()
                ) -> list[str]:
        ptype = tool.param(pname).type
        return sorted(v for v, t in self.state.items()
                      if type_satisfies(t, ptype) and v not in self.changed and v not in taken)

    def can_bind(self, tool: ToolSpec, upstream: dict[str, str]) -> bool:
        for p in tool.params:
            if not p.typed:
                continue
            if p.name in upstream:
                if not type_satisfies(self.out_type[upstream[p.name]], p.type):
                    return False
            elif not self.choices(tool, p.name):
                return False
        target = tool.returns.from_param or ""
        changes_state_value = in_place(tool) and tool.param(target).typed
        # never change a state value another step reads
        return not (changes_state_value and target not in upstream
                    and not [v for v in self.choices(tool, target) if v not in self.read])

    def add(self, tool: ToolSpec, upstream: dict[str, str]) -> str:
        step_id = f"s{len(self.steps) + 1}"
        bind: dict[str, Binding] = {}
        target = tool.returns.from_param if in_place(tool) else None
        for p in tool.params:
            if p.sample is not None:
                bind[p.name] = Binding(kind="sample", facet=p.sample.facet, of=p.sample.of)
            elif p.fresh is not None:
                bind[p.name] = Binding(kind="literal", value=self._fresh(p.fresh))
            elif p.name in upstream:
                bind[p.name] = Binding(kind="step", step=upstream[p.name])
            else:
                taken = frozenset(b.value for b in bind.values() if b.kind == "state" and b.value)
                options = self.choices(tool, p.name, taken)
                if p.name == target:
                    options = [v for v in options if v not in self.read]
                value = self.rng.choice(options)
                (self.changed if p.name == target else self.read).add(value)
                bind[p.name] = Binding(kind="state", value=value)
        self.steps.append(Step(id=step_id, tool=tool.name, bind=bind))
        self.out_type[step_id] = tool.returns.type
        return step_id

    def used(self) -> set[str]:
        """The tools already in the graph: a task uses each tool once (a second run of one
        is, more often than not, a copy of the first or its undoing)."""
        return {s.tool for s in self.steps}

    def _fresh(self, template: str) -> str:
        name = fresh_name(template, self.names | set(self.state))
        self.names.add(name)
        return name

    def consumers(self, step_id: str, writes_only: bool, fresh_only: bool = False,
                  lookups: bool = False) -> list[tuple[ToolSpec, str]]:
        """(tool, param) pairs that can consume ``step_id``'s output; with ``writes_only``,
        reads only when ``lookups`` and a write can take their value in turn."""
        out = []
        used = self.used()
        for tool in self.tools:
            if fresh_only and in_place(tool):
                continue
            if writes_only and tool.effect != "write" and not (
                    lookups and self.feeds(tool, fresh_only)):
                continue
            if tool.name in used or tool.related_inputs:
                continue
            for p in tool.params:
                if p.typed and self.can_bind(tool, {p.name: step_id}):
                    out.append((tool, p.name))
        return out

    def takers(self, tool: ToolSpec, fresh_only: bool = False) -> set[str]:
        """The write tools not yet in the graph that could take ``tool``'s value next."""
        self.out_type["?"] = tool.returns.type
        used = self.used() | {tool.name}
        try:
            return {c.name for c in self.tools
                    if c.effect == "write" and c.name not in used and not c.related_inputs
                    and not (fresh_only and in_place(c))
                    and any(p.typed and self.can_bind(c, {p.name: "?"}) for p in c.params)}
        finally:
            del self.out_type["?"]

    def feeds(self, tool: ToolSpec, fresh_only: bool = False) -> bool:
        """``tool`` is a lookup whose value some other write could take right after it."""
        return tool.observes_value and bool(self.takers(tool, fresh_only))

    def extend(self, step_id: str, length: int, may_end_in_read: bool,
               fresh_only: bool = False) -> str:
        """Grow a chain of up to ``length`` steps after ``step_id``; returns the last step.

        Only the final step may be a plain read (and only when ``may_end_in_read``); a
        lookup may come earlier, since a write can take its value next.  Where no write can
        take the last output, a read ends the chain early (when one may end it)."""
        last = step_id
        for i in range(length):
            final = i == length - 1
            options = self.consumers(last, writes_only=not (final and may_end_in_read),
                                     fresh_only=fresh_only, lookups=not final)
            if not options and may_end_in_read and not final:
                options, final = self.consumers(last, writes_only=False,
                                                fresh_only=fresh_only), True
            if not options:
                break
            tool, pname = _pick_tool_first(self, options)
            last = self.add(tool, {pname: last})
            if final:
                break
        return last


def _pick_tool_first(b: _Builder, options: list[tuple[ToolSpec, str]]
                     ) -> tuple[ToolSpec, str]:
    """A tool first, by :meth:`_Builder.weight`; then one of its fitting params (so a tool
    with two typed inputs is not twice as likely)."""
    names = sorted({t.name for t, _ in options})
    name = b.rng.choices(names, weights=[b.weight(n) for n in names])[0]
    return b.rng.choice([(t, p) for t, p in options if t.name == name])


def _starters(b: _Builder, writes_only: bool) -> list[ToolSpec]:
    """Tools that can run first; with ``writes_only``, writes and lookups a write can
    follow."""
    used = b.used()
    return [t for t in b.tools if not t.related_inputs and t.name not in used
            and (t.effect == "write" or not writes_only or b.feeds(t)) and b.can_bind(t, {})]


def _pick_start(b: _Builder, tools: list[ToolSpec]) -> ToolSpec:
    """A first tool, a lookup with probability :data:`LOOKUP_SHARE` when there is one."""
    lookups = [t for t in tools if t.observes_value]
    if lookups and b.lookup_first():
        tools = lookups
    return _pick_tool_first(b, [(t, "") for t in tools])[0]


def _joins(b: _Builder, related: bool) -> list[tuple[ToolSpec, list[str]]]:
    """Tools with two or more typed inputs, with the names of those inputs; tools that
    need related inputs only when ``related`` (the inputs share an upstream step)."""
    out, used = [], b.used()
    for t in b.tools:
        typed = [p.name for p in t.params if p.typed]
        if len(typed) >= 2 and (related or not t.related_inputs) and t.name not in used:
            out.append((t, typed))
    return out


def _chain(b: _Builder, depth: int) -> None:
    """A chain of up to ``depth`` steps from the state (none when no tool can start)."""
    starters = _starters(b, writes_only=depth > 1) or _starters(b, writes_only=False)
    if not starters:
        return
    tool = _pick_start(b, starters) if depth > 1 else _pick_tool_first(
        b, [(t, "") for t in starters])[0]
    first = b.add(tool, {})
    if depth > 1 and (tool.effect == "write" or tool.observes_value):
        b.extend(first, depth - 1, may_end_in_read=True)


def _branching(b: _Builder) -> list[ToolSpec]:
    """Starters whose value two different write tools could take (each tool runs once)."""
    return [t for t in _starters(b, writes_only=True) if len(b.takers(t, fresh_only=True)) >= 2]


def _branch_root(b: _Builder, spare: int) -> tuple[str, int] | None:
    """The step branches grow from (a value two different writes can take) and the levels
    it took: with probability :data:`LOOKUP_SHARE`, when a lookup can start and the shape
    has a ``spare`` level for it, the lookup and then one of its writes (so the branches
    build on an observed value), else a starter."""
    lookups = [t for t in _starters(b, writes_only=True) if t.observes_value] if spare else []
    if lookups and b.lookup_first():
        looked = b.add(_pick_tool_first(b, [(t, "") for t in lookups])[0], {})
        options = [(t, p) for t, p in b.consumers(looked, writes_only=True, fresh_only=True)
                   if t.effect == "write" and len(b.takers(t, fresh_only=True)) >= 2]
        if not options:
            return None
        tool, pname = _pick_tool_first(b, options)
        return b.add(tool, {pname: looked}), 2
    roots = _branching(b)
    return (b.add(_pick_tool_first(b, [(t, "") for t in roots])[0], {}), 1) if roots else None


def _fan_out(b: _Builder, depth: int) -> bool:
    found = _branch_root(b, spare=depth - 2) if depth >= 2 else None
    if found is None:
        return False
    root, levels = found
    branches = b.rng.choice([2, 3])
    for i in range(branches):
        last = i == branches - 1
        b.extend(root, depth - levels if i == 0 else 1, may_end_in_read=last, fresh_only=True)
    return True


def _producers_for(b: _Builder, ptype: str, source: str | None) -> list[tuple[ToolSpec, str]]:
    """Fresh-output write tools whose output fits ``ptype``: starters from the state when
    ``source`` is None, else consumers of step ``source`` (tool, param)."""
    if source is None:
        return [(t, "") for t in _starters(b, writes_only=True)
                if not in_place(t) and type_satisfies(t.returns.type, ptype)]
    return [(t, pn) for t, pn in b.consumers(source, writes_only=True, fresh_only=True)
            if type_satisfies(t.returns.type, ptype)]


def _join_over(b: _Builder, depth_left: int, source: str | None, depth_first: int) -> bool:
    """Two fresh branches (from the state, or from step ``source``) joined by one tool."""
    joins = _joins(b, related=source is not None)
    for join, typed in b.rng.sample(joins, len(joins)):
        for pa, pb in itertools.permutations(typed, 2):
            a = _producers_for(b, join.param(pa).type, source)
            c = _producers_for(b, join.param(pb).type, source)
            first_pick = _pick_tool_first(b, a) if a else None
            c = [(t, pn) for t, pn in c if first_pick is None or t.name != first_pick[0].name]
            if first_pick is None or not c:
                continue
            ends = []
            for pick, extra in ((first_pick, depth_first), (None, 0)):
                if pick is None:  # the first branch may have used the tools left for it
                    c = [(t, pn) for t, pn in c if t.name not in b.used()]
                    if not c:
                        return False
                    pick = _pick_tool_first(b, c)
                tool, pname = pick
                first = b.add(tool, {pname: source} if source else {})
                ends.append(first if extra <= 0 else b.extend(first, extra, False, True))
            if join.name in b.used() or not b.can_bind(join, {pa: ends[0], pb: ends[1]}):
                return False
            joined = b.add(join, {pa: ends[0], pb: ends[1]})
            if join.effect == "write" and depth_left > 0:
                b.extend(joined, depth_left, may_end_in_read=True)
            return True
    return False


def _fan_in(b: _Builder, depth: int) -> bool:
    """Two independent branches joined; the depth beyond 2 is split at random between the
    first branch and a tail after the join."""
    if depth < 2:
        return False
    branch = b.rng.randint(0, depth - 2)
    return _join_over(b, depth - 2 - branch, None, branch)


def _diamond(b: _Builder, depth: int) -> bool:
    found = _branch_root(b, spare=depth - 3) if depth >= 3 else None
    if found is None:
        return False
    root, levels = found
    return _join_over(b, depth - 2 - levels, root, 0)


SHAPES = {"fan_out": _fan_out, "fan_in": _fan_in, "diamond": _diamond}


def _fix(b: _Builder, repair: list[str], depth: int) -> None:
    """A fault's repair steps in order (each takes the one before's output where a typed
    input fits it), then a chain on the repaired state up to ``depth`` steps in all.  The
    chain's first step reads the repaired entry or makes a new one from it (changing it
    in place again would make the repair moot: fix a ticket's team, then move it); where
    no tool can, the chain starts from the repaired state's other entries."""
    last = ""
    for name in repair:
        tool = b.eco.spec.tool(name)
        fits = [p.name for p in tool.params if p.typed and last
                and type_satisfies(b.out_type[last], p.type)]
        last = b.add(tool, {fits[0]: last} if fits else {})
    left = depth - len(repair)
    if left <= 0 or b.eco.spec.tool(repair[-1]).effect != "write":
        return
    first = b.extend(last, 1, may_end_in_read=True, fresh_only=True)
    if first == last:  # nothing takes the repaired entry: work on from the state
        _chain(b, left)
    elif left > 1 and b.eco.spec.tool(b.steps[-1].tool).effect == "write":
        b.extend(first, left - 1, may_end_in_read=True)


def _draw_depth(rng: random.Random, depth_weights: dict[int, float] | None) -> int:
    weights = depth_weights or DEFAULT_DEPTH_WEIGHTS
    depths = sorted(weights)
    return rng.choices(depths, weights=[weights[d] for d in depths])[0]


def drawn_depth(seed: int, depth_weights: dict[int, float] | None = None,
                fix_steps: int = 0) -> int:
    """The depth :func:`plan_graph` aims at for ``seed`` (a fix graph's, with
    ``fix_steps`` repair steps: from :data:`FIX_DEPTH_WEIGHTS`, at least those steps); a
    graph comes out shallower when the planner finds no tool to extend it (nothing
    consumes its last output's type) or ends it with a read first."""
    if fix_steps:
        return max(fix_steps, _draw_depth(random.Random(f"{seed}:fix-depth"),
                                          FIX_DEPTH_WEIGHTS))
    return _draw_depth(random.Random(seed), depth_weights)


def plan_graph(eco: Ecosystem, seed: int, depth_weights: dict[int, float] | None = None,
               usage: Counter[str] | None = None, fault: str | None = None,
               scenario: str | None = None, lookup: bool | None = None) -> WorkflowGraph:
    """One graph over the state seeded with ``seed``; depth drawn from ``depth_weights``.
    With ``fault``, a fix graph: that injector's repair steps, then a short chain
    (:data:`FIX_DEPTH_WEIGHTS`).  With ``scenario``, the graph grows with that scenario's
    tools only, picked by their weights; where they cannot start from the seeded state, the
    graph is planned outside the scenario.

    ``usage`` (tool name -> uses so far in the run) makes rarely used tools likelier;
    ``lookup`` says whether the graph starts with a lookup where one can (None: with
    probability :data:`LOOKUP_SHARE`)."""
    rng = random.Random(seed)
    depth = _draw_depth(rng, depth_weights)
    shape = rng.choices(list(SHAPE_WEIGHTS), weights=list(SHAPE_WEIGHTS.values()))[0]
    state = {p: t for p in eco.state_paths(seed) if (t := eco.state_type(p))}
    usage = usage if usage is not None else Counter()
    recipe = dict(eco.spec.scenario(scenario).tools) if scenario else None

    def builder(salt: str) -> _Builder:
        return _Builder(eco, random.Random(f"{seed}:{salt}"), state, usage=usage,
                        lookup=lookup, recipe=recipe)

    if fault is not None:
        b = builder(f"fix:{fault}")
        repair = eco.spec.fault(fault).repair
        _fix(b, repair, drawn_depth(seed, fix_steps=len(repair)))
        return WorkflowGraph(ecosystem=eco.name, shape="chain", steps=b.steps, fault=fault,
                             scenario=scenario)
    if shape in SHAPES:
        b = builder(shape)
        if SHAPES[shape](b, depth):
            return WorkflowGraph(ecosystem=eco.name, shape=shape, steps=b.steps,
                                 scenario=scenario)
    b = builder("chain")
    _chain(b, depth)
    if not b.steps and scenario:
        return plan_graph(eco, seed, depth_weights, usage, lookup=lookup)
    if not b.steps:
        raise PlanningError(f"no tool of {eco.name!r} can start from the seeded state")
    return WorkflowGraph(ecosystem=eco.name, shape="chain", steps=b.steps, scenario=scenario)


def iter_candidates(eco: Ecosystem, n: int, run_seed: int,
                    depth_weights: dict[int, float] | None = None,
                    kinds: dict[TaskKind, float] | None = None,
                    off_scenario: float = OFF_SCENARIO_SHARE
                    ) -> Iterator[tuple[Candidate, int]]:
    """``n`` candidates with distinct fingerprints, one at a time, each with the number of
    duplicate fingerprints re-planned before it (bounded by :data:`MAX_REPLANS`); their
    kinds, faults and scenarios drawn as :mod:`tasks.mix` says.  A fix candidate whose seed
    has no place for its fault's defect becomes a build candidate.  Re-plans go round the
    scenarios that fit the candidate, and the last :data:`OUTSIDE_REPLANS` are planned
    outside any (a scenario's graphs are fewer than the ecosystem's), where the graph may
    start with a lookup or not whatever the candidate drew."""
    seen: set[str] = set()
    usage: Counter[str] = Counter()
    faults_used: Counter[str] = Counter()
    scenarios_used: Counter[str] = Counter()
    for index in range(n):
        dupes = 0
        fault = draw_fault(eco, index, run_seed, kinds or DEFAULT_KINDS, faults_used)
        reconstruct = draws_reconstruct(eco, index, run_seed, kinds or DEFAULT_KINDS)
        scenarios = draw_scenarios(eco, index, run_seed, fault, off_scenario, scenarios_used)
        # drawn once, so that re-plans do not favour the commoner graphs without a lookup
        lookup = random.Random(f"taskfactory:lookup:{run_seed}:{index}").random() < LOOKUP_SHARE
        for attempt in range(MAX_REPLANS):
            seed = candidate_seed(run_seed, index * 1000 + attempt)
            inside = scenarios and attempt < MAX_REPLANS - OUTSIDE_REPLANS
            scenario = scenarios[attempt % len(scenarios)] if inside else None
            starts = False if reconstruct else lookup if inside or not scenarios else None
            graph = plan_graph(eco, seed, depth_weights, usage, fault, scenario, starts)
            if reconstruct:
                graph = graph.model_copy(update={"reconstruct": True})
                if not layout_shared(eco, graph, seed, CASES_PUBLIC + CASES_HIDDEN - 1):
                    continue  # other seeds do not lay out what it reads: plan another
            if graph.fingerprint() not in seen:
                break
            dupes += 1
        if fault and not plantable(eco, seed, fault):  # no place for the defect: build
            graph = plan_graph(eco, seed, depth_weights, usage, None, graph.scenario, lookup)
        seen.add(graph.fingerprint())
        usage.update(s.tool for s in graph.steps)
        faults_used.update([graph.fault] if graph.fault else [])
        scenarios_used.update([graph.scenario] if graph.scenario else [])
        cid = hashlib.sha256(f"{eco.digest}:{seed}:{graph.model_dump_json()}".encode())
        yield Candidate(candidate_id=cid.hexdigest()[:16], index=index, ecosystem=eco.name,
                        seed=seed, graph=graph), dupes


def plan_candidates(eco: Ecosystem, n: int, run_seed: int,
                    depth_weights: dict[int, float] | None = None,
                    kinds: dict[TaskKind, float] | None = None,
                    off_scenario: float = OFF_SCENARIO_SHARE
                    ) -> tuple[list[Candidate], PlanStats]:
    """:func:`iter_candidates` as a list, with the run's planning stats."""
    planned = list(iter_candidates(eco, n, run_seed, depth_weights, kinds, off_scenario))
    return [c for c, _ in planned], PlanStats(planned=len(planned),
                                              duplicates_replanned=sum(d for _, d in planned))
