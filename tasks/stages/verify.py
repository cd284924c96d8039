"""Stage ``verify``: the checks from the probe delta, the verifier and the solution (on a
reconstruct task: the verifier of its hidden cases and the installer of its program).

In the goal style the checks of intermediate results are dropped
(:func:`tasks.rules.deliverables.goal_checks`): the instruction does not name them."""

from __future__ import annotations

from schemas.records import StageName
from tasks.core.commands import solution_script
from tasks.reconstruct.cases import PROGRAM_TIMEOUT_S, Case
from tasks.reconstruct.program import PROGRAM, installer, reference_program
from tasks.rules.deliverables import goal_checks
from tasks.stages.context import CandidateContext, Phase
from tasks.verify.verifier import derive_checks, render_reconstruct_verifier, render_verifier


class Verify:
    """What the task asserts (checks), the script that asserts it, and ``solve.sh``."""

    name: StageName = "verify"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "candidate", "graph", "trace", "before", "after",
                              "settings", "cases")
    gives: tuple[str, ...] = ("checks", "verifier_py", "solution_sh")

    def run(self, ctx: CandidateContext) -> None:
        if ctx.cases is not None:
            self.reconstruct(ctx, ctx.cases)
            return
        ctx.checks = derive_checks(ctx.eco, ctx.trace, ctx.before, ctx.after)
        if ctx.settings.instruction_style == "goal":
            ctx.checks = goal_checks(ctx.eco.spec, ctx.graph, ctx.trace, ctx.checks)
        ctx.verifier_py = render_verifier(ctx.checks, ctx.eco.probe_source,
                                          task_ref=ctx.candidate.candidate_id)
        ctx.solution_sh = solution_script(ctx.trace, ctx.eco.spec.answer_file)

    @staticmethod
    def reconstruct(ctx: CandidateContext, cases: list[Case]) -> None:
        """A reconstruct task: the checks of its first public case (the candidate's own
        seed), the verifier of its hidden cases, and a ``solve.sh`` installing the
        reference program."""
        ctx.checks = cases[0].checks
        ctx.verifier_py = render_reconstruct_verifier(
            [c for c in cases if not c.public], ctx.eco, PROGRAM, PROGRAM_TIMEOUT_S,
            task_ref=ctx.candidate.candidate_id)
        ctx.solution_sh = installer(reference_program(ctx.eco, ctx.graph, ctx.trace))
