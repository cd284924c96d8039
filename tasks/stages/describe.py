"""Stage ``describe``: in the goal style, seeded entries the trace names by a literal (an
id, a hash, a row key) are described instead, where a describer's command, run in the
initial state, resolves its description to exactly that literal (:mod:`tasks.instruct.describe`).
The trace gains the resolving calls, so trajectories show them."""

from __future__ import annotations

from schemas.records import StageName
from tasks.instruct.describe import describe, with_resolutions
from tasks.stages.context import CandidateContext, Phase


class Describe:
    """Descriptions that replace literals in the goal-level instruction."""

    name: StageName = "describe"
    phase: Phase = "execute_s"
    needs: tuple[str, ...] = ("eco", "candidate", "graph", "trace", "env", "before",
                              "settings")
    gives: tuple[str, ...] = ("descriptions", "trace")

    def run(self, ctx: CandidateContext) -> None:
        ctx.descriptions = {}
        if ctx.settings.instruction_style != "goal":
            return
        ctx.descriptions = describe(ctx.env, ctx.eco, ctx.graph, ctx.trace, ctx.before,
                                    ctx.candidate.seed)
        ctx.trace = with_resolutions(ctx.trace, ctx.descriptions)
