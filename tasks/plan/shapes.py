"""Graph shapes: a :class:`GraphBuilder` grows one workflow graph over a seeded state, step
by step, binding each typed input to an upstream output or a state value of a compatible
type (content-dependent literals are ``sample`` bindings, new names ``fresh`` literals).

- :func:`chain`: each step consumes the previous step's output;
- ``fan_out``: one step's output feeds two or three branches;
- ``fan_in``: independent branches feed one step with several typed inputs;
- ``diamond``: one output feeds two branches that a joining step brings together;
- :func:`fix_chain`: a fault's repair steps, then at most one read of the repaired entry.

:data:`SHAPES` maps the branching shapes' names to their builders, each returning False
where the ecosystem's tools cannot form it.  Which shape, depth, scenario and seed a graph
gets is :mod:`tasks.plan.planner`'s business.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

from environments.ecosystems import Ecosystem
from schemas.ecosystem import Returns, ToolSpec, binds, type_satisfies
from schemas.graph import Binding, Step

LOOKUP_SHARE = 0.85
"""Chance that a graph starts with a lookup when one can start it."""


def in_place(tool: ToolSpec) -> bool:
    """A write that changes an existing thing rather than creating a fresh one."""
    if tool.effect != "write" or not tool.returns.from_param or tool.creates:
        return False
    return tool.param(tool.returns.from_param).fresh is None


def fresh_name(template: str, taken: set[str]) -> str:
    """``template`` with ``{n}`` as "", "_2", "_3"... : the first name not in ``taken``."""
    n = 1
    while (name := template.replace("{n}", "" if n == 1 else f"_{n}")) in taken:
        n += 1
    return name


@dataclass
class GraphBuilder:
    """Grows one graph; tracks types, names and which state values are read or changed."""

    eco: Ecosystem
    rng: random.Random
    state: dict[str, str]
    steps: list[Step] = field(default_factory=list)
    out: dict[str, Returns] = field(default_factory=dict)
    """Each step's output: its type, and how the verifier compares it."""
    names: set[str] = field(default_factory=set)
    read: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    settled: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per step whose output is an entry the task created (a record, or a fresh name such
    as a new branch) or changed in place: the fields the task has set on it so far (the
    creating step's arguments and ``returns.settles``, then each in-place write's
    ``returns.changes``).  No later write sets one again: a ticket created and then
    resolved, or retitled, or closed and then set to another status, is one job said twice
    (:mod:`tasks.execute.purpose`); a new branch moved back drops what the task put on
    it."""
    usage: Counter[str] = field(default_factory=Counter)
    """How often each tool was used by the run so far (biases choices toward coverage)."""
    lookup: bool | None = None
    """Whether the graph starts with a lookup where one can start; None: drawn."""
    recipe: dict[str, float] | None = None
    """The scenario's tools and their weights; None outside any scenario (every tool,
    each weighing 1)."""
    max_writes: int | None = None
    """The scenario's bound on write steps other than a fault's repairs (None: none)."""
    scope: list[str] | None = None
    """The scenario's state types: state values of other types are not bound (None: any)."""
    barred: frozenset[str] = frozenset()
    """Tools the graph may not grow with from now on (a lookup tree's tail bars lookups)."""

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools a graph may grow with: the scenario's (every tool outside one), but
        never the faults' repair tools, which only a fault's own repair steps use
        (:func:`fix_chain`), and no write once the graph holds ``max_writes`` of them."""
        writes = sum(1 for s in self.steps
                     if (t := self.eco.spec.tool(s.tool)).effect == "write" and not t.repair)
        full = self.max_writes is not None and writes >= self.max_writes
        return [t for t in self.eco.spec.tools
                if not t.repair and (self.recipe is None or t.name in self.recipe)
                and not (full and t.effect == "write") and t.name not in self.barred]

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
                      if type_satisfies(t, ptype) and v not in self.changed and v not in taken
                      and (self.scope is None or any(type_satisfies(t, s) for s in self.scope)))

    def can_bind(self, tool: ToolSpec, upstream: dict[str, str]) -> bool:
        for p in tool.params:
            if not p.typed:
                continue
            if p.name in upstream:
                out = self.out[upstream[p.name]]
                if out.alias or not binds(p, out.type, out.compare):
                    return False
            elif not self.choices(tool, p.name):
                return False
        target = tool.returns.from_param or ""
        if in_place(tool) and target in upstream and \
                self.settled.get(upstream[target], frozenset()) & set(tool.returns.changes):
            return False
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
        self.out[step_id] = tool.returns
        if tool.creates or (tool.effect == "write" and not in_place(tool)
                            and tool.returns.from_param):
            self.settled[step_id] = frozenset(tool.returns.settles) | {p.name for p in tool.params}
        elif in_place(tool):
            earlier = self.settled.get(upstream[target], frozenset()) \
                if target in upstream else frozenset()
            self.settled[step_id] = earlier | set(tool.returns.changes)
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
        self.out["?"] = tool.returns
        used = self.used() | {tool.name}
        try:
            return {c.name for c in self.tools
                    if c.effect == "write" and c.name not in used and not c.related_inputs
                    and not (fresh_only and in_place(c))
                    and any(p.typed and self.can_bind(c, {p.name: "?"}) for p in c.params)}
        finally:
            del self.out["?"]

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


def _pick_tool_first(b: GraphBuilder, options: list[tuple[ToolSpec, str]]
                     ) -> tuple[ToolSpec, str]:
    """A tool first, by :meth:`GraphBuilder.weight`; then one of its fitting params (so a tool
    with two typed inputs is not twice as likely)."""
    names = sorted({t.name for t, _ in options})
    name = b.rng.choices(names, weights=[b.weight(n) for n in names])[0]
    return b.rng.choice([(t, p) for t, p in options if t.name == name])


def _starters(b: GraphBuilder, writes_only: bool) -> list[ToolSpec]:
    """Tools that can run first; with ``writes_only``, writes and lookups a write can
    follow."""
    used = b.used()
    return [t for t in b.tools if not t.related_inputs and t.name not in used
            and (t.effect == "write" or not writes_only or b.feeds(t)) and b.can_bind(t, {})]


def _pick_start(b: GraphBuilder, tools: list[ToolSpec]) -> ToolSpec:
    """A first tool, a lookup with probability :data:`LOOKUP_SHARE` when there is one."""
    lookups = [t for t in tools if t.observes_value]
    if lookups and b.lookup_first():
        tools = lookups
    return _pick_tool_first(b, [(t, "") for t in tools])[0]


def _joins(b: GraphBuilder, related: bool) -> list[tuple[ToolSpec, list[str]]]:
    """Tools with two or more typed inputs, with the names of those inputs; tools that
    need related inputs only when ``related`` (the inputs share an upstream step)."""
    out, used = [], b.used()
    for t in b.tools:
        typed = [p.name for p in t.params if p.typed]
        if len(typed) >= 2 and (related or not t.related_inputs) and t.name not in used:
            out.append((t, typed))
    return out


def chain(b: GraphBuilder, depth: int) -> None:
    """A chain of up to ``depth`` steps from the state (none when no tool can start)."""
    starters = _starters(b, writes_only=depth > 1) or _starters(b, writes_only=False)
    if not starters:
        return
    tool = _pick_start(b, starters) if depth > 1 else _pick_tool_first(
        b, [(t, "") for t in starters])[0]
    first = b.add(tool, {})
    if depth > 1 and (tool.effect == "write" or tool.observes_value):
        b.extend(first, depth - 1, may_end_in_read=True)


def _branching(b: GraphBuilder) -> list[ToolSpec]:
    """Starters whose value two different write tools could take (each tool runs once)."""
    return [t for t in _starters(b, writes_only=True) if len(b.takers(t, fresh_only=True)) >= 2]


def _branch_root(b: GraphBuilder, spare: int) -> tuple[str, int] | None:
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


def _fan_out(b: GraphBuilder, depth: int) -> bool:
    found = _branch_root(b, spare=depth - 2) if depth >= 2 else None
    if found is None:
        return False
    root, levels = found
    branches = b.rng.choice([2, 3])
    for i in range(branches):
        last = i == branches - 1
        b.extend(root, depth - levels if i == 0 else 1, may_end_in_read=last, fresh_only=True)
    return True


def _producers_for(b: GraphBuilder, ptype: str, source: str | None) -> list[tuple[ToolSpec, str]]:
    """Fresh-output write tools whose output fits ``ptype``: starters from the state when
    ``source`` is None, else consumers of step ``source`` (tool, param)."""
    if source is None:
        return [(t, "") for t in _starters(b, writes_only=True)
                if not in_place(t) and type_satisfies(t.returns.type, ptype)]
    return [(t, pn) for t, pn in b.consumers(source, writes_only=True, fresh_only=True)
            if type_satisfies(t.returns.type, ptype)]


def _join_over(b: GraphBuilder, depth_left: int, source: str | None, depth_first: int) -> bool:
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
                    allowed = {t.name for t in b.tools} - b.used()
                    c = [(t, pn) for t, pn in c if t.name in allowed]
                    if not c:
                        return False
                    pick = _pick_tool_first(b, c)
                tool, pname = pick
                first = b.add(tool, {pname: source} if source else {})
                ends.append(first if extra <= 0 else b.extend(first, extra, False, True))
            if join.name in b.used() or join not in b.tools \
                    or not b.can_bind(join, {pa: ends[0], pb: ends[1]}):
                return False
            joined = b.add(join, {pa: ends[0], pb: ends[1]})
            if join.effect == "write" and depth_left > 0:
                b.extend(joined, depth_left, may_end_in_read=True)
            return True
    return False


def _fan_in(b: GraphBuilder, depth: int) -> bool:
    """Two independent branches joined; the depth beyond 2 is split at random between the
    first branch and a tail after the join."""
    if depth < 2:
        return False
    branch = b.rng.randint(0, depth - 2)
    return _join_over(b, depth - 2 - branch, None, branch)


def _diamond(b: GraphBuilder, depth: int) -> bool:
    found = _branch_root(b, spare=depth - 3) if depth >= 3 else None
    if found is None:
        return False
    root, levels = found
    return _join_over(b, depth - 2 - levels, root, 0)


SHAPES = {"fan_out": _fan_out, "fan_in": _fan_in, "diamond": _diamond}


def fix_chain(b: GraphBuilder, repair: list[str], depth: int,
              report: list[str] | None = None) -> None:
    """A fault's repair steps in order (each takes the one before's output where a typed
    input fits it), then, when ``depth`` leaves room, one read of the repaired entry: a
    report on what the fix left (a field of the repaired file, the commits of the restored
    branch), one of the fault's ``report`` tools when it names them
    (:class:`schemas.ecosystem.FaultSpec`).  Nothing is built on the repair: a ticket filed
    under the repaired one or a new tag on the restored release is a second job appended
    to the fix, which a person asking for the fix would not ask for in the same breath.
    A scenario's fix graph may report with the fault's ``report`` tools even where the
    scenario's recipe does not list them (a ticket's field is a fix's report, and a build
    task's question beside its work)."""
    last = ""
    for name in repair:
        tool = b.eco.spec.tool(name)
        fits = [p.name for p in tool.params if p.typed and last
                and binds(p, b.out[last].type, b.out[last].compare)]
        last = b.add(tool, {fits[0]: last} if fits else {})
    if depth <= len(repair) or b.eco.spec.tool(repair[-1]).effect != "write":
        return
    if b.recipe is not None and report:  # the fault names its report, whatever the recipe
        b.recipe = {**dict.fromkeys(report, 1.0), **b.recipe}
    reads = [(tool, p) for tool, p in b.consumers(last, writes_only=False, fresh_only=True)
             if tool.effect != "write" and (report is None or tool.name in report)]
    if reads:
        tool, pname = _pick_tool_first(b, reads)
        b.add(tool, {pname: last})
