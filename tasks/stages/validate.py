"""Stage ``validate``: the gate (:func:`tasks.validate.run_gate`), then the sandboxes close."""

from __future__ import annotations

from schemas.records import StageName
from tasks.failures import StageFailure
from tasks.realize import LiveEnvironment
from tasks.stages.context import CandidateContext, Phase
from tasks.validate import run_gate


class Validate:
    """An unrepaired trace is gated in its execution sandbox; a repaired one in a fresh
    sandbox realized from the seed plus the repairs' additions, which must reproduce the
    state the trace started from.  Every sandbox is closed before the later stages, which
    may wait for an LLM.  A run that requires observation rejects a task the open-loop
    control solves."""

    name: StageName = "validate"
    phase: Phase = "gate_s"
    needs: tuple[str, ...] = ("env", "eco", "candidate", "open_sandbox", "trace", "checks",
                              "draft", "solution_sh", "verifier_py", "before", "after",
                              "require_observation")
    gives: tuple[str, ...] = ("gate",)

    def run(self, ctx: CandidateContext) -> None:
        env, realized = ctx.env, None
        if ctx.trace.repairs:
            ctx.close_sandboxes()
            env = ctx.sandboxes.enter_context(LiveEnvironment(
                ctx.eco, ctx.candidate.seed, ctx.open, ctx.trace.environment,
                ctx.candidate.graph.fault))
            realized = ctx.before
        ctx.gate = run_gate(env, ctx.eco, ctx.trace, ctx.checks, ctx.draft.text,
                            ctx.solution_sh, ctx.verifier_py, ctx.after, realized=realized)
        ctx.close_sandboxes()
        if ctx.require_observation and not ctx.gate.needs_observation:
            raise StageFailure("validate", "no_observation_needed",
                               f"the open-loop solution scores {ctx.gate.open_loop_reward}: "
                               "the instruction's values alone solve the task")
