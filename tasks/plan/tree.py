"""The lookup tree: a graph whose looked-up values all meet in one piece of work.

A hard task needs several values the solver must look up before it acts
(:mod:`tasks.plan.lookups`).  Lookups grown one after another, each on its own branch,
read as separate jobs glued together; here the graph is planned backwards from the work
they serve.  :func:`lookup_tree` picks a *sink* (a write, or a read that ends the graph
where no write can take the values), then a producer for each of its typed inputs: a
lookup (one looked-up value), a write whose own inputs are produced the same way, or a
value of the seeded state.  Every lookup's value flows, through writes or further lookups,
into the sink, so the looked-up values chain (lookup A's value is lookup B's input) or
fan in (two branches, each from a lookup, feed one join or write) or both.  Once built, a
chain may extend the sink's output up to the graph's depth
(:meth:`~tasks.plan.shapes.GraphBuilder.extend`).

The tree is drawn at random, guided by an upper bound (each tool counted as if it could
run again) on the lookups a sub-tree of a given size can hold (:class:`_Potential`), then
added step by step under the builder's rules (each tool once, :meth:`can_bind`, the
scenario's recipe and its bound on writes); a draw that breaks one is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.ecosystem import Param, ToolSpec, binds
from tasks.plan.shapes import GraphBuilder, in_place

TREE_TRIES = 24
"""Trees drawn for one graph before the planner gives up on its seed."""
WRITE_SINK_SHARE = 0.9
"""Chance that the sink is a write when writes and reads can both take the values."""
FEED_TRIES = 3
"""Producers a draw tries for one input before it gives up on the tree."""
KEEP_BEST_OF = 3
"""Trees drawn that hold the lookups, of which the planner keeps the one with most steps."""
FILL_SHARE = 0.5
"""Chance that an input the state could give, and no lookup need feed, is fed by a step of
its own where the tree has room (a ticket labelled before it is assigned)."""
NONE = -1_000
"""The potential of a sub-tree that cannot be built within its steps."""


@dataclass(frozen=True)
class Node:
    """A step to add: its tool and the sub-trees that feed its typed inputs (the others
    are bound by the builder: state values, samples, fresh names)."""

    tool: ToolSpec
    inputs: tuple[tuple[str, Node], ...] = ()

    @property
    def size(self) -> int:
        return 1 + sum(n.size for _, n in self.inputs)

    @property
    def lookups(self) -> int:
        """Looked-up values below this step (a lookup's value is looked up when a step
        takes it: the sink's own output is not)."""
        return sum(n.lookups + n.tool.observes_value for _, n in self.inputs)


@dataclass
class _Potential:
    """The most lookups a sub-tree can hold within a number of steps, counting each tool as
    if it could run again (an upper bound that steers the draw)."""

    b: GraphBuilder
    memo: dict[tuple[str, str, int], int] = field(default_factory=dict)
    inner: dict[tuple[str, int], int] = field(default_factory=dict)
    feeding: dict[tuple[str, str], list[ToolSpec]] = field(default_factory=dict)

    def producers(self, tool: ToolSpec, pname: str) -> list[ToolSpec]:
        if (tool.name, pname) not in self.feeding:
            self.feeding[tool.name, pname] = self._producers(tool, pname)
        return self.feeding[tool.name, pname]

    def _producers(self, tool: ToolSpec, pname: str) -> list[ToolSpec]:
        """Tools whose output can feed ``tool``'s input ``pname``: lookups and writes (a
        read that is no lookup only ends a graph), never a tool needing related inputs.  A
        lookup's input comes from the state or another lookup, never from a write: what a
        lookup would print about an entry the task has just written (the team a user was
        just moved to, the lead just appointed) is no value the solver has to find out."""
        p = tool.param(pname)
        return [t for t in self.b.tools if t.name != tool.name and not t.related_inputs
                and (t.observes_value or t.effect == "write" and not tool.observes_value)
                and not t.returns.alias and binds(p, t.returns.type, t.returns.compare)]

    def from_state(self, tool: ToolSpec, pname: str) -> bool:
        return bool(self.b.choices(tool, pname))

    def param(self, tool: ToolSpec, pname: str, steps: int) -> int:
        key = (tool.name, pname, steps)
        if key not in self.memo:
            best = 0 if self.from_state(tool, pname) else NONE
            for q in self.producers(tool, pname) if steps else []:
                best = max(best, self.producer(q, steps))
            self.memo[key] = best
        return self.memo[key]

    def producer(self, tool: ToolSpec, steps: int) -> int:
        inner = self.inside(tool, steps - 1) if steps >= 1 else NONE
        return inner + tool.observes_value if inner > NONE else NONE

    def inside(self, tool: ToolSpec, steps: int) -> int:
        """The most lookups ``tool``'s typed inputs can hold in ``steps`` steps together."""
        if (tool.name, steps) not in self.inner:
            self.inner[tool.name, steps] = self._inside(tool, steps)
        return self.inner[tool.name, steps]

    def _inside(self, tool: ToolSpec, steps: int) -> int:
        best = {0: 0}  # steps used -> lookups
        for p in typed(tool):
            grown: dict[int, int] = {}
            for used, have in best.items():
                for k in range(steps - used + 1):
                    got = self.param(tool, p.name, k)
                    if got > NONE and grown.get(used + k, NONE) < have + got:
                        grown[used + k] = have + got
            best = grown
        return max(best.values(), default=NONE)


def typed(tool: ToolSpec) -> list[Param]:
    return [p for p in tool.params if p.typed]


@dataclass
class _Draw:
    """One random tree, drawn top-down."""

    b: GraphBuilder
    pot: _Potential
    used: set[str] = field(default_factory=set)

    def grow(self, tool: ToolSpec, need: int, steps: int) -> Node | None:
        """A sub-tree at ``tool`` of at most ``steps`` steps whose inputs hold ``need``
        lookups or more; None where the draw finds none."""
        self.used.add(tool.name)
        params = typed(tool)
        self.b.rng.shuffle(params)
        inputs: list[tuple[str, Node]] = []
        left = steps - 1
        for i, p in enumerate(params):
            last = i == len(params) - 1
            spare = left - sum(0 if self.pot.from_state(tool, r.name) else 1
                               for r in params[i + 1:])
            want = need if last else self.b.rng.randint(min(need, 1), need)
            if want == 0 and self.pot.from_state(tool, p.name) and (
                    spare < 1 or self.b.rng.random() >= FILL_SHARE):
                continue
            node = self.feed(tool, p.name, want, spare)
            if node is None and want == 0 and self.pot.from_state(tool, p.name):
                continue
            if node is None:
                return None
            inputs.append((p.name, node))
            need, left = max(0, need - node.lookups - node.tool.observes_value), left - node.size
        return Node(tool, tuple(inputs)) if need <= 0 else None

    def feed(self, tool: ToolSpec, pname: str, need: int, steps: int) -> Node | None:
        """A producer sub-tree for ``tool``'s input ``pname``."""
        options = [q for q in self.pot.producers(tool, pname)
                   if q.name not in self.used and self.pot.producer(q, steps) >= need]
        if need:  # the lookups first, when one can take the value straight from the state
            options = [q for q in options if q.observes_value] or options
        for _ in range(FEED_TRIES):
            if not options:
                return None
            q = self.b.rng.choices(options, weights=[self.b.weight(q.name) for q in options])[0]
            options.remove(q)
            before = set(self.used)
            node = self.grow(q, max(0, need - q.observes_value), steps)
            if node is not None and not (tool.returns.from_param == pname and in_place(tool)
                                         and settled(node) & set(tool.returns.changes)):
                return node
            self.used = before
        return None


def settled(node: Node) -> frozenset[str]:
    """The fields of the entry ``node``'s step puts out that the task has set by then: the
    builder's :attr:`~tasks.plan.shapes.GraphBuilder.settled`, known before the steps are
    added (an in-place write that would set one again is not bound to it)."""
    t = node.tool
    if t.creates or (t.effect == "write" and not in_place(t) and t.returns.from_param):
        return frozenset(t.returns.settles) | {p.name for p in t.params}
    if not in_place(t):
        return frozenset()
    below = dict(node.inputs).get(t.returns.from_param or "")
    return (settled(below) if below else frozenset()) | set(t.returns.changes)


def draw_tree(b: GraphBuilder, need: int, steps: int) -> Node | None:
    """A tree of at most ``steps`` steps holding ``need`` looked-up values, or None: the
    largest of :data:`KEEP_BEST_OF` drawn.  Its sink is a write with probability
    :data:`WRITE_SINK_SHARE` when a write can end such a tree, else any tool that can."""
    pot = _Potential(b)
    used = b.used()
    fit = [t for t in b.tools if t.name not in used and not t.related_inputs and typed(t)
           and pot.inside(t, steps - 1) >= need]
    writes = [t for t in fit if t.effect == "write"]
    if not fit:
        return None
    drawn: list[Node] = []
    for _ in range(TREE_TRIES):
        sinks = writes if writes and b.rng.random() < WRITE_SINK_SHARE else fit
        sink = b.rng.choices(sinks, weights=[b.weight(t.name) for t in sinks])[0]
        tree = _Draw(b, pot).grow(sink, need, steps)
        if tree is not None and tree.lookups >= need and tree.size <= steps:
            drawn.append(tree)
            if len(drawn) == KEEP_BEST_OF:
                break
    # the deepest: a write's tree counts a step more, for the chain that may follow it
    return max(drawn, key=lambda t: t.size + (t.tool.effect == "write"), default=None)


def add_tree(b: GraphBuilder, node: Node) -> str | None:
    """Add ``node``'s steps, its inputs first; the sink's step id, or None where a step
    breaks a rule of the builder (its tool used or outside the scenario's tools, or an
    input it cannot take)."""
    upstream = {}
    for pname, child in node.inputs:
        sid = add_tree(b, child)
        if sid is None:
            return None
        upstream[pname] = sid
    if node.tool.name in b.used() or node.tool.name not in {t.name for t in b.tools} \
            or not b.can_bind(node.tool, upstream):
        return None
    return b.add(node.tool, upstream)


def lookup_tree(b: GraphBuilder, depth: int, need: int) -> bool:
    """A graph of about ``depth`` steps whose ``need`` looked-up values meet in one piece of
    work: a tree (:func:`draw_tree`), then, after a write that ends it, a chain up to
    ``depth`` steps without lookups (a lookup there would read back what the task wrote)."""
    tree = draw_tree(b, need, depth)
    if tree is None:
        return False
    sink = add_tree(b, tree)
    if sink is None:
        return False
    if b.eco.spec.tool(b.steps[-1].tool).effect == "write" and len(b.steps) < depth:
        b.barred = frozenset(t.name for t in b.eco.spec.tools if t.observes_value)
        b.extend(sink, depth - len(b.steps), may_end_in_read=True)
    return True
