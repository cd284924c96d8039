"""Stage ``execute``: run the graph, repairing within the budget, and probe the result."""

from __future__ import annotations

from schemas.records import StageName
from tasks.execute.realize import probe
from tasks.execute.repair import Repairer
from tasks.execute.repair_llm import propose_repair
from tasks.execute.run_graph import execute_graph
from tasks.stages.context import CandidateContext, Phase


class Execute:
    """The trace and the graph as executed (repaired steps, truncated tail), the state the
    trace started from (the seed plus what repairs added) and the state it ended in."""

    name: StageName = "execute"
    phase: Phase = "execute_s"
    needs: tuple[str, ...] = ("env", "eco", "candidate", "settings", "llm")
    gives: tuple[str, ...] = ("trace", "graph", "before", "after")

    def run(self, ctx: CandidateContext) -> None:
        client = ctx.llm
        repairer: Repairer | None = None
        if client is not None:
            repairer = lambda request: propose_repair(client, request)  # noqa: E731
        ctx.trace, ctx.graph = execute_graph(ctx.env, ctx.eco, ctx.candidate,
                                             ctx.settings.max_repairs, repairer,
                                             ctx.settings.strict)
        ctx.before = ctx.env.before
        ctx.after = probe(ctx.env.sandbox, ctx.eco)
