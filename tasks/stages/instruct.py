"""Stage ``instruct``: the draft must hold every required literal, must not show the
task's answer and must be readable (:mod:`tasks.rules.readability`); with an LLM, its
paraphrase replaces it when the paraphrase passes the same checks (it adds no code span,
and the LLM is never shown the answer)."""

from __future__ import annotations

from schemas.records import StageName
from tasks.instruct.instruction import context_text
from tasks.instruct.paraphrase import paraphrase_instruction
from tasks.instruct.preserve import check_items_preserved, check_preserved, required_literals
from tasks.reconstruct.instruction import stated
from tasks.rules.leaks import check_not_leaked, determined
from tasks.rules.readability import check_readable
from tasks.stages.context import CandidateContext, Phase


class Instruct:
    """The final instruction and what it must preserve."""

    name: StageName = "instruct"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "graph", "trace", "checks", "draft", "llm",
                              "descriptions", "cases")
    gives: tuple[str, ...] = ("required", "instruction")

    def run(self, ctx: CandidateContext) -> None:
        draft = ctx.draft
        trace, checks = ctx.trace, ctx.checks
        if ctx.cases is not None:  # the rule's literals, as the draft states them
            rule = stated(ctx.eco, ctx.graph, ctx.trace, ctx.checks)
            trace, checks = rule.trace, rule.checks
        required = required_literals(ctx.eco.spec, ctx.graph, trace, checks, draft.style,
                                     {x: d.shown for x, d in ctx.descriptions.items()})
        check_preserved(draft.text, required)
        defined = " ".join(s.text for s in draft.sentences if s.shared)
        check_items_preserved(draft.lines, required,
                              f"{context_text(ctx.eco, draft.style)} {defined}")
        check_not_leaked(ctx.trace.answer, draft.text, draft.lines,
                         determined(ctx.eco.spec, ctx.graph, ctx.trace, ctx.checks,
                                    set(ctx.descriptions)))
        check_readable(draft.text)
        ctx.required = required
        ctx.instruction = draft
        if ctx.llm is not None:
            ctx.instruction = paraphrase_instruction(ctx.llm, draft, required, ctx.trace.answer)
