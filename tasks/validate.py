"""The validation gate, in the candidate's own sandbox via snapshot/restore.

The verifier must fail on the untouched state and pass after the reference solution.
The reference run re-executes the whole trace from the initial state, so it doubles as
the determinism check: its final probe must equal the traced run's final probe."""

from __future__ import annotations

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox, Snapshot
from schemas.verifier import GateResult
from tasks.failures import StageFailure
from tasks.realize import probe
from tasks.verify import run_verifier

SOLUTION_TIMEOUT_S = 120.0


def _without(state: dict, key: str) -> dict:
    """``state`` minus entry ``key`` in every section (the answer file is not state)."""
    return {section: {k: v for k, v in entries.items() if k != key}
            for section, entries in state.items()}


def _first_difference(a: dict, b: dict) -> str:
    for section in sorted(set(a) | set(b)):
        sa, sb = a.get(section, {}), b.get(section, {})
        for key in sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                return f"{section}/{key}"
    return "(none)"


def run_gate(sandbox: Sandbox, initial: Snapshot, solution_sh: str, verifier_py: str,
             eco: Ecosystem | None = None, traced_state: dict | None = None) -> GateResult:
    """Baseline (untouched) and reference runs; raises StageFailure naming the failed control.

    With ``eco`` and ``traced_state``, the state after the reference solution must equal
    the traced run's final state (else ``nondeterministic``)."""
    sandbox.restore(initial)
    baseline = run_verifier(sandbox, verifier_py)
    sandbox.restore(initial)
    solved = sandbox.exec(["bash", "-s"], stdin=solution_sh.encode(), timeout=SOLUTION_TIMEOUT_S,
                          env={"TASKFACTORY_WORKDIR": sandbox.workdir})
    if traced_state is not None and eco is not None and solved.exit_code == 0:
        replayed = _without(probe(sandbox, eco), eco.spec.answer_file)
        traced_state = _without(traced_state, eco.spec.answer_file)
        if replayed != traced_state:
            raise StageFailure("validate", "nondeterministic",
                               "a second execution ends in a different state at "
                               + _first_difference(replayed, traced_state))
    reference = run_verifier(sandbox, verifier_py)
    gate = GateResult(
        baseline_reward=baseline.reward, baseline_checks_passed=baseline.checks_passed,
        reference_reward=reference.reward, reference_checks_passed=reference.checks_passed,
        checks_total=reference.checks_total)
    if gate.baseline_reward != 0.0:
        raise StageFailure("validate", "baseline_passed",
                           f"verifier passes on the untouched environment "
                           f"({baseline.checks_passed}/{baseline.checks_total} checks)")
    if solved.exit_code != 0 or gate.reference_reward != 1.0:
        raise StageFailure("validate", "reference_failed",
                           f"reference solution exit {solved.exit_code}, verifier "
                           f"{reference.checks_passed}/{reference.checks_total} checks")
    return gate
