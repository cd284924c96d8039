"""Stage ``verify``: the checks from the probe delta, the verifier and the solution."""

from __future__ import annotations

from schemas.records import StageName
from tasks.commands import solution_script
from tasks.stages.context import CandidateContext, Phase
from tasks.verify import derive_checks, render_verifier


class Verify:
    """What the task asserts (checks), the script that asserts it, and ``solve.sh``."""

    name: StageName = "verify"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = ("eco", "candidate", "trace", "before", "after")
    gives: tuple[str, ...] = ("checks", "verifier_py", "solution_sh")

    def run(self, ctx: CandidateContext) -> None:
        ctx.checks = derive_checks(ctx.eco, ctx.trace, ctx.before, ctx.after)
        ctx.verifier_py = render_verifier(ctx.checks, ctx.eco.probe_source,
                                          task_ref=ctx.candidate.candidate_id)
        ctx.solution_sh = solution_script(ctx.trace, ctx.eco.spec.answer_file)
