"""Stage ``sandbox``: open the candidate's sandbox and realize its environment in it."""

from __future__ import annotations

from schemas.records import StageName
from tasks.execute.realize import LiveEnvironment
from tasks.plan.tiers import scale_of
from tasks.stages.context import CandidateContext, Phase


class OpenEnvironment:
    """The seed written (with the graph's fault planted, for a fix task), the setup run,
    the service started; the sandbox is the context's until the candidate is done (or the
    gate closes it)."""

    name: StageName = "sandbox"
    phase: Phase = "sandbox_s"
    needs: tuple[str, ...] = ("eco", "candidate", "open_sandbox")
    gives: tuple[str, ...] = ("env",)

    def run(self, ctx: CandidateContext) -> None:
        ctx.env = ctx.sandboxes.enter_context(
            LiveEnvironment(ctx.eco, ctx.candidate.seed, ctx.open,
                            fault=ctx.candidate.graph.fault,
                            scale=scale_of(ctx.candidate.tier)))
