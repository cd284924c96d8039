"""The validation gate: the verifier must fail on the untouched state and pass after the
reference solution, both run in the candidate's own sandbox via snapshot/restore."""

from __future__ import annotations

from environments.sandbox import Sandbox, Snapshot
from schemas.verifier import GateResult
from tasks.failures import StageFailure
from tasks.verify import run_verifier

SOLUTION_TIMEOUT_S = 120.0


def run_gate(sandbox: Sandbox, initial: Snapshot, solution_sh: str, verifier_py: str) -> GateResult:
    """Baseline (untouched) and reference runs; raises StageFailure naming the failed control."""
    sandbox.restore(initial)
    baseline = run_verifier(sandbox, verifier_py)
    sandbox.restore(initial)
    solved = sandbox.exec(["bash", "-s"], stdin=solution_sh.encode(), timeout=SOLUTION_TIMEOUT_S,
                          env={"TASKFACTORY_WORKDIR": sandbox.workdir})
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
