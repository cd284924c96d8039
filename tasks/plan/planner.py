"""Planning: seeded workflow graphs whose every input is satisfiable by construction.

Each candidate gets its own seed, derived from the run seed and its index.  The planner
lists the candidate's seeded paths (pure Python), picks a target depth from a weighted
distribution and a shape (``chain``, ``fan_out``, ``fan_in``, ``diamond``), and grows the
graph with :mod:`tasks.plan.shapes`, which assigns tools by semantic type.

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

A candidate's kind, fault and scenario are drawn first (:mod:`tasks.plan.mix`).  A scenario
limits the tools a graph grows with to its recipe and weighs them, and a build graph must
do the work one of its motivations promises.  A fix graph starts
from a fault injector's planted defect (``WorkflowGraph.fault``): its first steps are the
injector's repair tools, whose sampled inputs find the defect at execution time, then at
most one read reports on the repaired entry.  Repair tools appear nowhere else.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.ecosystem import Scenario
from schemas.graph import Candidate, TaskKind, Tier, WorkflowGraph
from tasks.plan.layout import CASES_HIDDEN, CASES_PUBLIC, layout_shared
from tasks.plan.lookups import looked_up, lookup_capacity, lookup_gap
from tasks.plan.mix import (
    DEFAULT_KINDS,
    OFF_SCENARIO_SHARE,
    draw_fault,
    draw_scenarios,
    draws_reconstruct,
    parse_weights,
    plantable,
)
from tasks.plan.shapes import LOOKUP_SHARE, SHAPES, GraphBuilder, chain, fix_chain
from tasks.plan.tiers import TIER_RULES
from tasks.plan.tree import lookup_tree

MAX_REPLANS = 40
OUTSIDE_REPLANS = 15
"""Re-plans of a candidate, out of :data:`MAX_REPLANS`, that leave its scenarios."""
DEPTHS = range(1, 9)
"""The workflow depths a run may plan."""
DEFAULT_DEPTH_WEIGHTS: dict[int, float] = {1: 1, 2: 2, 3: 3, 4: 3, 5: 2, 6: 2, 7: 1, 8: 1}
SHAPE_WEIGHTS = {"chain": 4, "fan_out": 2, "fan_in": 2, "diamond": 2}
FIX_DEPTH_WEIGHTS: dict[int, float] = {2: 1, 3: 2, 4: 3, 5: 3, 6: 2}
"""Depths of a fix graph: its repair steps, then (at any depth past them) one read of the
repaired entry."""
FIT_TRIES = 8
"""Graphs a build candidate grows in its scenario, each with its own salt, until one fits
a motivation of the scenario (:class:`schemas.ecosystem.Motivation`); when none does, the
candidate tries another seed or scenario."""


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
    wrong = [d for d in depths if d not in DEPTHS]
    if wrong:
        raise ValueError(f"depth must be {DEPTHS[0]}..{DEPTHS[-1]}, got {wrong[0]}")
    return depths


def consumes_observed(graph: WorkflowGraph, eco: Ecosystem) -> bool:
    """Some step takes as input the value a read step printed (an observed value)."""
    reads = {s.id for s in graph.steps if eco.spec.tool(s.tool).effect == "read"}
    return any(b.kind == "step" and b.step in reads for s in graph.steps for b in s.bind.values())


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
               scenario: str | None = None, lookup: bool | None = None,
               min_lookups: int = 0, scale: int = 1) -> WorkflowGraph:
    """One graph over the state seeded with ``seed``; depth drawn from ``depth_weights``.
    With ``fault``, a fix graph: that injector's repair steps, then a short chain
    (:data:`FIX_DEPTH_WEIGHTS`).  With ``scenario``, the graph grows with that scenario's
    tools only, picked by their weights, and a build graph fits one of its motivations
    (:data:`FIT_TRIES`); ``PlanningError`` where the scenario makes none from this seed.

    ``usage`` (tool name -> uses so far in the run) makes rarely used tools likelier;
    ``lookup`` says whether the graph starts with a lookup where one can (None: with
    probability :data:`LOOKUP_SHARE`).  With ``min_lookups`` (a build graph), the graph
    holds that many looked-up values that meet in one piece of work
    (:func:`tasks.plan.tree.lookup_tree`), or ``PlanningError``; ``scale`` is the seed's."""
    rng = random.Random(seed)
    depth = _draw_depth(rng, depth_weights)
    shape = rng.choices(list(SHAPE_WEIGHTS), weights=list(SHAPE_WEIGHTS.values()))[0]
    state = {p: t for p in eco.state_paths(seed, scale) if (t := eco.state_type(p))}
    usage = usage if usage is not None else Counter()
    story = eco.spec.scenario(scenario) if scenario else None

    def builder(salt: str) -> GraphBuilder:
        return GraphBuilder(eco, random.Random(f"{seed}:{salt}"), state, usage=usage,
                            lookup=lookup, recipe=dict(story.tools) if story else None,
                            max_writes=story.max_writes if story else None,
                            scope=story.state if story else None)

    if fault is not None:
        b = builder(f"fix:{fault}")
        spec = eco.spec.fault(fault)
        fix_chain(b, spec.repair, drawn_depth(seed, fix_steps=len(spec.repair)), spec.report)
        return WorkflowGraph(ecosystem=eco.name, shape="chain", steps=b.steps, fault=fault,
                             scenario=scenario)
    if min_lookups:
        return _observing(eco, story, builder, depth, min_lookups)
    for attempt in range(FIT_TRIES if story or eco.members else 1):
        salt = "" if attempt == 0 else f":{attempt}"
        if shape in SHAPES:
            b = builder(shape + salt)
            if SHAPES[shape](b, depth) and _fits(eco, story, b):
                return WorkflowGraph(ecosystem=eco.name, shape=shape, steps=b.steps,
                                     scenario=scenario)
        b = builder("chain" + salt)
        chain(b, depth)
        if b.steps and _fits(eco, story, b):
            return WorkflowGraph(ecosystem=eco.name, shape="chain", steps=b.steps,
                                 scenario=scenario)
    raise PlanningError(f"scenario {scenario!r} makes no graph from seed {seed}" if scenario
                        else f"no graph of {eco.name!r} crosses its members from seed {seed}"
                        if eco.members else f"no tool of {eco.name!r} can start from the "
                        "seeded state")


def _observing(eco: Ecosystem, story: Scenario | None, builder: Callable[[str], GraphBuilder],
               depth: int, need: int) -> WorkflowGraph:
    """A graph of ``need`` looked-up values or more (:func:`lookup_tree`) that fits the
    scenario or crosses the stack (:func:`_fits`), from up to :data:`FIT_TRIES` builders."""
    where = f"scenario {story.name!r}" if story else f"ecosystem {eco.name!r}"
    if lookup_capacity(eco, dict(story.tools) if story else None) < need:
        raise PlanningError(f"the tools of {where} give fewer than {need} looked-up values")
    for attempt in range(FIT_TRIES):
        b = builder(f"lookups:{attempt}")
        if lookup_tree(b, depth, need) and looked_up(eco, b.steps) >= need \
                and _fits(eco, story, b):
            joins = any(sum(x.kind == "step" for x in s.bind.values()) > 1 for s in b.steps)
            return WorkflowGraph(ecosystem=eco.name, shape="fan_in" if joins else "chain",
                                 steps=b.steps, scenario=story.name if story else None)
    raise PlanningError(f"{where} makes no graph of {need} looked-up values from this seed")


def _fits(eco: Ecosystem, story: Scenario | None, b: GraphBuilder) -> bool:
    """The graph does the work one of the scenario's motivations promises; in a stack, it
    crosses the stack's members (outside a scenario, or in one whose recipe crosses them:
    a graph of one member's tools is that member's task, made where it stands alone)."""
    tools = {s.tool for s in b.steps}
    if story is None:
        return not eco.members or eco.crosses(tools)
    return bool(story.fitting(tools)) and (eco.crosses(tools) or not eco.crosses(story.tools))


def iter_candidates(eco: Ecosystem, n: int, run_seed: int,
                    depth_weights: dict[int, float] | None = None,
                    kinds: dict[TaskKind, float] | None = None,
                    off_scenario: float = OFF_SCENARIO_SHARE,
                    indices: Sequence[int] | None = None, tier: Tier = "medium",
                    min_lookups: int | None = None
                    ) -> Iterator[tuple[Candidate, int]]:
    """``n`` candidates with distinct fingerprints, one at a time, each with the number of
    duplicate fingerprints re-planned before it (bounded by :data:`MAX_REPLANS`); their
    kinds, faults and scenarios drawn as :mod:`tasks.plan.mix` says.  A fix candidate whose seed
    has no place for its fault's defect, or whose every re-plan repeats a fix planned
    already (a repair nothing builds on is one task per fault; such a fault is not drawn
    again in the run), tries the run's other faults, least used first, and becomes a build
    candidate only when none gives a new fix.
    Re-plans go round the scenarios that fit the candidate, and the last
    :data:`OUTSIDE_REPLANS` are planned outside any (a scenario's graphs are fewer than the
    ecosystem's), where the graph may start with a lookup or not whatever the candidate
    drew.

    ``indices`` are the candidates' indices in the run (default ``range(n)``): every draw
    of a candidate is keyed by the run seed and that index, so the ecosystems of one run
    (each planned with its own stride of indices) draw independently of each other.
    ``tier`` and ``min_lookups``: see :func:`_tier`."""
    rules = TIER_RULES[tier]
    depth_weights, kinds, need = _tier(eco, tier, depth_weights, kinds, min_lookups)
    seen: set[str] = set()
    usage: Counter[str] = Counter()
    faults_used: Counter[str] = Counter()
    scenarios_used: Counter[str] = Counter()
    exhausted: set[str] = set()  # faults whose every re-plan repeated a fix planned already
    for index in range(n) if indices is None else indices[:n]:
        fault = draw_fault(eco, index, run_seed, kinds or DEFAULT_KINDS, faults_used,
                           frozenset(exhausted))
        reconstruct = draws_reconstruct(eco, index, run_seed, kinds or DEFAULT_KINDS)
        scenarios = draw_scenarios(eco, index, run_seed, fault, off_scenario, scenarios_used)
        # drawn once, so that re-plans do not favour the commoner graphs without a lookup
        lookup = random.Random(f"taskfactory:lookup:{run_seed}:{index}").random() < LOOKUP_SHARE
        graph, seed, dupes = _distinct(eco, run_seed, index, seen, _Draw(
            depth_weights, usage, fault, scenarios, lookup, reconstruct, need, rules.scale))
        tried: set[str] = set()
        while fault and (not plantable(eco, seed, fault, rules.scale)  # no place for the defect
                         or graph.fingerprint() in seen):  # this fix is planned already
            if graph.fingerprint() in seen:  # every re-plan repeated one: none of it is left
                exhausted.add(fault)
            tried.add(fault)
            fault = draw_fault(eco, index, run_seed, kinds or DEFAULT_KINDS, faults_used,
                               frozenset(exhausted | tried))  # None: a build task
            kept = (draw_scenarios(eco, index, run_seed, fault, off_scenario, scenarios_used)
                    if fault else [graph.scenario] if graph.scenario else [])
            graph, seed, more = _distinct(eco, run_seed, index, seen, _Draw(
                depth_weights, usage, fault, kept, lookup, reconstruct, need, rules.scale))
            dupes += more
        seen.add(graph.fingerprint())
        usage.update(s.tool for s in graph.steps)
        faults_used.update([graph.fault] if graph.fault else [])
        scenarios_used.update([graph.scenario] if graph.scenario else [])
        cid = hashlib.sha256(f"{eco.digest}:{seed}:{graph.model_dump_json()}".encode()
                             + (f":{tier}".encode() if tier != "medium" else b""))
        yield Candidate(candidate_id=cid.hexdigest()[:16], index=index, ecosystem=eco.name,
                        seed=seed, graph=graph, tier=tier), dupes


@dataclass(frozen=True)
class _Draw:
    """What one candidate drew before its graph is planned."""

    depth_weights: dict[int, float] | None
    usage: Counter[str]
    fault: str | None
    scenarios: list[str]
    lookup: bool
    reconstruct: bool
    min_lookups: int = 0
    scale: int = 1

    @property
    def need(self) -> int:
        """The looked-up values the graph needs (a fix graph: none asked)."""
        return 0 if self.fault else self.min_lookups

    def scenarios_for(self, eco: Ecosystem, names: list[str]) -> list[str]:
        """Of scenarios ``names``, those whose tools can give the looked-up values asked."""
        return [n for n in names if not self.need
                or lookup_capacity(eco, dict(eco.spec.scenario(n).tools)) >= self.need]


def _distinct(eco: Ecosystem, run_seed: int, index: int, seen: set[str], draw: _Draw
              ) -> tuple[WorkflowGraph, int, int]:
    """The candidate's graph, its seed and the duplicates re-planned before it: up to
    :data:`MAX_REPLANS` seeds, round the scenarios, the last :data:`OUTSIDE_REPLANS`
    outside any; the last one planned when every one repeats a fingerprint of ``seen``."""
    dupes = 0
    scenarios = draw.scenarios_for(eco, draw.scenarios)
    graph: WorkflowGraph | None = None
    for attempt in range(MAX_REPLANS):
        seed = candidate_seed(run_seed, index * 1000 + attempt)
        inside = scenarios and attempt < MAX_REPLANS - OUTSIDE_REPLANS
        scenario = scenarios[attempt % len(scenarios)] if inside else None
        starts = False if draw.reconstruct else draw.lookup if inside or not scenarios else None
        try:
            graph = plan_graph(eco, seed, draw.depth_weights, draw.usage, draw.fault, scenario,
                               starts, draw.need, draw.scale)
        except PlanningError:
            if scenario is None and not eco.members and not draw.need:
                raise
            if scenario is None:  # no graph across the stack outside its scenarios: inside
                scenarios = scenarios or draw.scenarios_for(
                    eco, [sc.name for sc in eco.spec.scenarios])
            continue  # no story of the scenario here: another seed, or scenario
        if draw.reconstruct:
            graph = graph.model_copy(update={"reconstruct": True})
            if not layout_shared(eco, graph, seed, CASES_PUBLIC + CASES_HIDDEN - 1):
                continue  # other seeds do not lay out what it reads: plan another
        if graph.fingerprint() not in seen:
            break
        dupes += 1
    if graph is None:
        raise PlanningError(f"no graph of {eco.name!r} " + (
            f"with {draw.need} looked-up values" if draw.need else "crosses its members")
            + f" from the seeds of candidate {index}")
    return graph, seed, dupes


def _tier(eco: Ecosystem, tier: Tier, depth_weights: dict[int, float] | None,
          kinds: dict[TaskKind, float] | None, min_lookups: int | None
          ) -> tuple[dict[int, float] | None, dict[TaskKind, float] | None, int]:
    """The depths, kinds and looked-up values per build graph of a run at ``tier``
    (:mod:`tasks.plan.tiers`): the tier's depths where none are given, its kinds where it
    has its own, its looked-up values unless ``min_lookups`` says otherwise.  Build graphs
    that need looked-up values are planned in the scenarios whose tools can give them, else
    outside any; ``PlanningError`` at once where the ecosystem's tools cannot
    (:func:`lookup_gap`)."""
    rules = TIER_RULES[tier]
    need = rules.min_lookups if min_lookups is None else min_lookups
    if need and (gap := lookup_gap(eco, need)):
        raise PlanningError(gap)
    return depth_weights or rules.depth_weights, rules.kinds or kinds, need


def plan_candidates(eco: Ecosystem, n: int, run_seed: int,
                    depth_weights: dict[int, float] | None = None,
                    kinds: dict[TaskKind, float] | None = None,
                    off_scenario: float = OFF_SCENARIO_SHARE, tier: Tier = "medium",
                    min_lookups: int | None = None) -> tuple[list[Candidate], PlanStats]:
    """:func:`iter_candidates` as a list, with the run's planning stats."""
    planned = list(iter_candidates(eco, n, run_seed, depth_weights, kinds, off_scenario,
                                   tier=tier, min_lookups=min_lookups))
    return [c for c, _ in planned], PlanStats(planned=len(planned),
                                              duplicates_replanned=sum(d for _, d in planned))
