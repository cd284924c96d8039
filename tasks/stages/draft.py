"""Stage ``draft``: the instruction as the templates render it, before the gate (whose
literals control reads it)."""

from __future__ import annotations

from schemas.records import StageName
from tasks.arguments import program_arguments
from tasks.instruct import render_instruction
from tasks.instruct_reconstruct import reconstruct_instruction
from tasks.stages.context import CandidateContext, Phase


class Draft:
    """Goal, spec or step style; the same seed gives the same text.  A reconstruct task's
    wraps the spec style's in the program's interface and examples."""

    name: StageName = "draft"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "candidate", "graph", "trace", "checks",
                              "instruction_style", "descriptions", "cases")
    gives: tuple[str, ...] = ("draft",)

    def run(self, ctx: CandidateContext) -> None:
        ctx.draft = render_instruction(
            ctx.eco, ctx.graph, ctx.trace, ctx.candidate.seed, ctx.instruction_style,
            ctx.checks, {x: d.text for x, d in ctx.descriptions.items()})
        if ctx.cases is not None:
            ctx.draft = reconstruct_instruction(ctx.draft, ctx.cases,
                                                program_arguments(ctx.eco, ctx.graph))
