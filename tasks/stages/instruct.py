"""Stage ``instruct``: the draft must hold every required literal; with an LLM, its
paraphrase replaces it when the paraphrase holds them too."""

from __future__ import annotations

from schemas.records import StageName
from tasks.paraphrase import paraphrase_instruction
from tasks.preserve import check_items_preserved, check_preserved, required_literals
from tasks.stages.context import CandidateContext, Phase


class Instruct:
    """The final instruction and what it must preserve."""

    name: StageName = "instruct"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "graph", "trace", "checks", "draft", "llm")
    gives: tuple[str, ...] = ("required", "instruction")

    def run(self, ctx: CandidateContext) -> None:
        required = required_literals(ctx.eco.spec, ctx.graph, ctx.trace, ctx.checks)
        check_preserved(ctx.draft.text, required)
        check_items_preserved(ctx.draft.items, required, ctx.eco.spec.context)
        ctx.required = required
        ctx.instruction = ctx.draft
        if ctx.llm is not None:
            ctx.instruction = paraphrase_instruction(ctx.llm, ctx.draft, required)
