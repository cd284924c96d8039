"""Stage ``cases``: a reconstruct candidate's cases (:mod:`tasks.reconstruct.cases`); nothing for
the
other kinds."""

from __future__ import annotations

from schemas.records import StageName
from tasks.reconstruct.cases import run_cases
from tasks.reconstruct.program import reference_program
from tasks.stages.context import CandidateContext, Phase


class Cases:
    """Public and hidden cases, each an initial state of the candidate's layout and the
    checks the reference program meets on it (None unless the graph is a reconstruct
    one).  A reconstruct task's instruction writes every literal (the spec style): the
    program is run on states its descriptions were not resolved in."""

    name: StageName = "cases"
    phase: Phase = "execute_s"
    needs: tuple[str, ...] = ("env", "eco", "candidate", "graph", "trace", "after")
    gives: tuple[str, ...] = ("cases", "settings")

    def run(self, ctx: CandidateContext) -> None:
        ctx.cases = None
        if ctx.graph.kind != "reconstruct":
            return
        ctx.settings = ctx.settings.model_copy(update={"instruction_style": "spec"})
        program = reference_program(ctx.eco, ctx.graph, ctx.trace)
        ctx.cases = run_cases(ctx.env.sandbox, ctx.eco, ctx.graph, ctx.trace, program,
                              ctx.candidate.seed, ctx.after)
