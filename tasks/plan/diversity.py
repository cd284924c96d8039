"""Diversity of a planned batch: distinct structures, tool coverage, depths (and how many
came out shallower than drawn), shapes, kinds and scenarios, and the share of multi-step
graphs in which a step takes a value a read observed."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from environments.ecosystems import Ecosystem
from schemas.graph import Candidate
from tasks.plan.planner import consumes_observed, drawn_depth


class DiversityReport(BaseModel):
    ecosystem: str
    graphs: int
    distinct_fingerprints: int
    duplicates_replanned: int
    tools_used: int
    tools_total: int
    unused_tools: list[str]
    tool_uses: dict[str, int]
    depth_histogram: dict[int, int]
    shapes: dict[str, int]
    kinds: dict[str, int] = {}
    scenarios: dict[str, int] = {}
    """Graphs per scenario of the ecosystem (every declared one, used or not) and, under
    ``""``, outside any."""
    multi_step: int = 0
    """Graphs of two or more steps."""
    observed: int = 0
    """Of those, graphs in which a step takes a value a read step printed."""
    shallower: int = 0
    """Graphs shallower than the depth drawn for them: the planner found no tool to extend
    them (or ended them with a read) before that depth."""
    shallower_ends: dict[str, int] = {}
    """The type of the last output of each shallower graph, most frequent first: where
    planning stopped early."""

    @property
    def distinct_share(self) -> float:
        return self.distinct_fingerprints / max(1, self.graphs)

    @property
    def observed_share(self) -> float:
        return self.observed / max(1, self.multi_step)


def diversity(eco: Ecosystem, candidates: list[Candidate], replanned: int,
              depth_weights: dict[int, float] | None = None) -> DiversityReport:
    """The batch's report; ``depth_weights``: those it was planned with (for the depth
    each graph was drawn at)."""
    uses = Counter(s.tool for c in candidates for s in c.graph.steps)
    short = [c.graph for c in candidates if c.graph.depth < drawn_depth(
        c.seed, depth_weights, len(eco.spec.fault(c.graph.fault).repair) if c.graph.fault else 0)]
    ends = Counter(eco.spec.tool(g.steps[-1].tool).returns.type for g in short)
    names = [t.name for t in eco.spec.tools]
    multi = [c.graph for c in candidates if len(c.graph.steps) > 1]
    return DiversityReport(
        ecosystem=eco.name, graphs=len(candidates),
        distinct_fingerprints=len({c.graph.fingerprint() for c in candidates}),
        duplicates_replanned=replanned, tools_used=sum(1 for n in names if uses[n]),
        tools_total=len(names), unused_tools=[n for n in names if not uses[n]],
        tool_uses={n: uses[n] for n in names},
        depth_histogram=dict(sorted(Counter(c.graph.depth for c in candidates).items())),
        shapes=dict(sorted(Counter(c.graph.shape for c in candidates).items())),
        kinds=dict(sorted(Counter(c.graph.kind for c in candidates).items())),
        scenarios={**{s.name: 0 for s in eco.spec.scenarios},
                   **Counter(c.graph.scenario or "" for c in candidates)},
        multi_step=len(multi), observed=sum(consumes_observed(g, eco) for g in multi),
        shallower=len(short), shallower_ends=dict(ends.most_common()))


def format_report(r: DiversityReport) -> str:
    width = max(r.depth_histogram.values(), default=1)
    lines = [
        f"ecosystem {r.ecosystem}: {r.graphs} graphs planned",
        f"distinct fingerprints: {r.distinct_fingerprints} ({100 * r.distinct_share:.1f}%), "
        f"{r.duplicates_replanned} duplicates re-planned",
        f"tool coverage: {r.tools_used}/{r.tools_total}"
        + (f" (unused: {', '.join(r.unused_tools)})" if r.unused_tools else ""),
        "shapes: " + ", ".join(f"{k} {v}" for k, v in r.shapes.items()),
        "kinds: " + ", ".join(f"{k} {v}" for k, v in r.kinds.items()),
        "scenarios: " + ", ".join(f"{k or '(none)'} {v}" for k, v in r.scenarios.items()),
        f"observed values: {r.observed} of {r.multi_step} multi-step graphs "
        f"({100 * r.observed_share:.1f}%) have a step that takes a value a read printed",
        f"shallower than drawn: {r.shallower} of {r.graphs} graphs"
        + (" (their last outputs: "
           + ", ".join(f"{t} {n}" for t, n in r.shallower_ends.items()) + ")"
           if r.shallower else ""),
        "depth histogram:",
    ]
    for depth, n in r.depth_histogram.items():
        lines.append(f"  {depth} {'#' * max(1, round(40 * n / width))} {n}")
    lines.append("tool uses: " + ", ".join(f"{k} {v}" for k, v in
                                             sorted(r.tool_uses.items(), key=lambda kv: -kv[1])))
    return "\n".join(lines)
