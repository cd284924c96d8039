"""The validation gate: every control starts from the snapshot of the initial state (the
seed plus the trace's environment additions), restored in the gate's sandbox:

1. realization — in a freshly realized sandbox (``realized`` given), its state equals the
   one the trace started from;
2. baseline — the untouched environment (what the nop shortcut leaves) scores 0;
3. determinism — the trace's commands run once more from the initial state, each
   reproducing its observation (normalized), and end in the traced final state;
4. reference — ``solve.sh`` exits 0 and scores 1;
5. shortcuts — every expected output created empty; the reference minus its last
   mutating step; every output filled with the instruction's literals (the answer
   tried as each literal): none may score 1.

The factory gates an unrepaired trace in its execution sandbox (a fresh working state
without a fresh container) and a repaired one in a fresh sandbox.  ``check-harbor``
realizes every exported environment from scratch again and compares its state digest.

The first control that fails raises :class:`StageFailure` naming it.
"""

from __future__ import annotations

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox
from schemas.trace import Trace
from schemas.verifier import Check, GateResult
from tasks.commands import solution_script
from tasks.failures import StageFailure
from tasks.realize import LiveEnvironment, probe
from tasks.shortcuts import Shortcut, shortcut
from tasks.steps import replay
from tasks.verify import VerifierResult, run_verifier

SOLUTION_TIMEOUT_S = 120.0


def _without(state: dict, key: str) -> dict:
    """``state`` minus entry ``key`` in every section (the answer file is not state)."""
    return {section: {k: v for k, v in entries.items() if k != key}
            for section, entries in state.items()}


def first_difference(a: dict, b: dict) -> str | None:
    """``section/key`` of the first entry where two probe states differ, else None."""
    for section in sorted(set(a) | set(b)):
        sa, sb = a.get(section, {}), b.get(section, {})
        for key in sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                return f"{section}/{key}"
    return None


def _same_state(eco: Ecosystem, got: dict, want: dict, what: str,
                trace: Trace | None = None) -> None:
    answer = eco.spec.answer_file
    where = first_difference(_without(got, answer), _without(want, answer))
    if where is None:
        return
    writer = ""
    for st in trace.steps if trace else []:
        target = eco.spec.tool(st.tool).returns.from_param
        if target and where.split("/", 1)[1] == st.args.get(target):
            writer = f" (written by {st.step_id} {st.tool})"
    raise StageFailure("validate", "nondeterministic", f"{what} at {where}{writer}")


def run_solution(sandbox: Sandbox, script: str) -> int:
    """Run a ``solve.sh`` text in the sandbox's workdir, as the gate does; its exit code."""
    done = sandbox.exec(["bash", "-s"], stdin=script.encode(), timeout=SOLUTION_TIMEOUT_S,
                        env={"TASKFACTORY_WORKDIR": sandbox.workdir})
    return done.exit_code


def _fake(env: LiveEnvironment, verifier_py: str, fake: Shortcut) -> VerifierResult:
    """Restore the initial state, apply a shortcut, and score it."""
    sb = env.sandbox
    sb.restore(env.initial)
    if fake.files:
        sb.write_files(fake.files)
    if fake.script:
        done = sb.exec(["bash", "-c", fake.script], timeout=60)
        if done.exit_code != 0:
            raise StageFailure("validate", "environment", "a shortcut control could not be "
                               f"applied: {done.stderr.strip()[-200:]}")
    return run_verifier(sb, verifier_py, fake.answers)


def _must_fail(result: VerifierResult | None, reason: str, what: str) -> None:
    if result is not None and result.reward == 1.0:
        raise StageFailure("validate", reason,  # type: ignore[arg-type]
                           f"the verifier passes {what} ({result.checks_passed}/"
                           f"{result.checks_total} checks)")


def run_gate(env: LiveEnvironment, eco: Ecosystem, trace: Trace, checks: list[Check],
             instruction: str, solution_sh: str, verifier_py: str, traced_after: dict,
             realized: dict | None = None) -> GateResult:
    """Every control of the gate in ``env`` (whatever state it is in: each control restores
    ``env.initial`` first); with ``realized`` (the state the trace started from), ``env``
    was just realized and must equal it.  The results, or StageFailure naming the first
    control that failed."""
    sb = env.sandbox
    if realized is not None:
        _same_state(eco, env.before, realized, "the environment realizes differently")
    sb.restore(env.initial)
    baseline = run_verifier(sb, verifier_py)
    if baseline.reward != 0.0:
        raise StageFailure("validate", "baseline_passed",
                           f"verifier passes on the untouched environment "
                           f"({baseline.checks_passed}/{baseline.checks_total} checks)")
    replay(sb, eco, env.initial, trace.steps, stage="validate")
    _same_state(eco, probe(sb, eco), traced_after, "a second execution ends elsewhere", trace)
    sb.restore(env.initial)
    solved = run_solution(sb, solution_sh)
    reference = run_verifier(sb, verifier_py)
    if solved != 0 or reference.reward != 1.0:
        raise StageFailure("validate", "reference_failed",
                           f"reference solution exit {solved}, verifier "
                           f"{reference.checks_passed}/{reference.checks_total} checks")
    empty = _fake(env, verifier_py, shortcut(eco, checks, "empty", instruction))
    _must_fail(empty, "empty_outputs_passed", "with every output created empty")
    partial = None
    writes = [s for s in trace.steps if eco.spec.tool(s.tool).effect == "write"]
    if writes:
        sb.restore(env.initial)
        run_solution(sb, solution_script(trace, eco.spec.answer_file,
                                   [s for s in trace.steps if s is not writes[-1]]))
        partial = run_verifier(sb, verifier_py)
        _must_fail(partial, "partial_solution_passed",
                   "after the reference solution minus its last mutating step")
    filled = _fake(env, verifier_py, shortcut(eco, checks, "literals", instruction))
    _must_fail(filled, "literals_passed", "with the outputs holding the instruction's literals")
    return GateResult(
        checks_total=reference.checks_total,
        baseline_reward=baseline.reward, baseline_checks_passed=baseline.checks_passed,
        reference_reward=reference.reward, reference_checks_passed=reference.checks_passed,
        empty_reward=empty.reward, empty_checks_passed=empty.checks_passed,
        partial_reward=partial.reward if partial else None,
        partial_checks_passed=partial.checks_passed if partial else None,
        literals_reward=filled.reward, literals_checks_passed=filled.checks_passed,
        literal_trials=filled.trials)
