"""Stage ``draft``: the instruction as the templates render it, before the gate (whose
literals control reads it)."""

from __future__ import annotations

from schemas.records import StageName
from tasks.instruct import render_instruction
from tasks.stages.context import CandidateContext, Phase


class Draft:
    """Goal, spec or step style; the same seed gives the same text."""

    name: StageName = "draft"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "candidate", "graph", "trace", "checks",
                              "instruction_style", "descriptions")
    gives: tuple[str, ...] = ("draft",)

    def run(self, ctx: CandidateContext) -> None:
        ctx.draft = render_instruction(
            ctx.eco, ctx.graph, ctx.trace, ctx.candidate.seed, ctx.instruction_style,
            ctx.checks, {x: d.text for x, d in ctx.descriptions.items()})
