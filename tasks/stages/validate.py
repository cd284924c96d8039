"""Stage ``validate``: the gate (:func:`tasks.gate.gate.run_gate`), then the sandboxes close."""

from __future__ import annotations

from schemas.records import StageName
from tasks.core.failures import StageFailure
from tasks.execute.realize import LiveEnvironment
from tasks.gate.gate import Gated, run_gate, run_reconstruct_gate
from tasks.plan.lookups import looked_up
from tasks.plan.tiers import TIER_RULES, scale_of
from tasks.reconstruct.program import program_trace
from tasks.stages.context import CandidateContext, Phase


class Validate:
    """An unrepaired trace is gated in its execution sandbox; a repaired one in a fresh
    sandbox realized from the seed plus the repairs' additions, which must reproduce the
    state the trace started from.  Every sandbox is closed before the later stages, which
    may wait for an LLM.  A run that requires observation, and every hard candidate, is
    rejected when the open-loop control solves it; a hard candidate whose repairs left it
    fewer looked-up values than its tier asks is rejected before the gate.  A reconstruct
    task is gated in its execution sandbox, laid out as the agent's workspace
    (:func:`tasks.gate.gate.run_reconstruct_gate`)."""

    name: StageName = "validate"
    phase: Phase = "gate_s"
    needs: tuple[str, ...] = ("env", "eco", "candidate", "graph", "open_sandbox", "trace",
                              "checks",
                              "draft", "solution_sh", "verifier_py", "before", "after",
                              "settings", "cases")
    gives: tuple[str, ...] = ("gate",)

    def run(self, ctx: CandidateContext) -> None:
        need = TIER_RULES[ctx.candidate.tier].min_lookups
        if need and ctx.graph.fault is None and (held := looked_up(ctx.eco, ctx.graph)) < need:
            raise StageFailure("validate", "too_few_lookups",
                               f"the repaired graph holds {held} looked-up values; the "
                               f"{ctx.candidate.tier} tier asks {need}")
        if ctx.cases is not None:
            trace = program_trace(ctx.eco, ctx.graph, ctx.trace)
            ctx.gate = run_reconstruct_gate(ctx.env.sandbox, ctx.eco, Gated(
                trace, ctx.checks, ctx.draft.text, ctx.solution_sh, ctx.verifier_py), ctx.cases)
            ctx.close_sandboxes()
            return
        env, realized = ctx.env, None
        if ctx.trace.repairs:
            ctx.close_sandboxes()
            env = ctx.sandboxes.enter_context(LiveEnvironment(
                ctx.eco, ctx.candidate.seed, ctx.open, ctx.trace.environment,
                ctx.candidate.graph.fault, scale_of(ctx.candidate.tier)))
            realized = ctx.before
        ctx.gate = run_gate(env, ctx.eco, Gated(ctx.trace, ctx.checks, ctx.draft.text,
                                                ctx.solution_sh, ctx.verifier_py),
                            ctx.after, realized=realized)
        ctx.close_sandboxes()
        if (ctx.settings.require_observation or TIER_RULES[ctx.candidate.tier].needs_observation
                ) and not ctx.gate.needs_observation:
            raise StageFailure("validate", "no_observation_needed",
                               f"the open-loop solution scores {ctx.gate.open_loop_reward}: "
                               "the instruction's values alone solve the task")
