"""Stage ``draft``: the instruction as the templates render it, before the gate (whose
literals control reads it)."""

from __future__ import annotations

from schemas.records import StageName
from tasks.instruct.instruction import render_instruction
from tasks.reconstruct.instruction import reconstruct_draft
from tasks.stages.context import CandidateContext, Phase


class Draft:
    """Goal, spec or step style; the same seed gives the same text.  A reconstruct task's
    is the spec style's, stated as a rule, in the program's interface and examples
    (:func:`tasks.reconstruct.instruction.reconstruct_draft`)."""

    name: StageName = "draft"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "candidate", "graph", "trace", "checks",
                              "settings", "descriptions", "cases")
    gives: tuple[str, ...] = ("draft",)

    def run(self, ctx: CandidateContext) -> None:
        if ctx.cases is not None:
            ctx.draft = reconstruct_draft(ctx.eco, ctx.graph, ctx.trace, ctx.candidate.seed,
                                          ctx.checks, ctx.cases)
            return
        ctx.draft = render_instruction(
            ctx.eco, ctx.graph, ctx.trace, ctx.candidate.seed, ctx.settings.instruction_style,
            ctx.checks, {x: d.text for x, d in ctx.descriptions.items()})
