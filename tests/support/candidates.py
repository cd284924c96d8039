"""Plan and build a batch of candidates of one built-in ecosystem, as a run would."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from environments.config import BackendConfig
from environments.ecosystems import Ecosystem
from flows.run.candidate import build_candidate
from schemas.records import TaskRow
from tasks.plan.planner import plan_candidates


def build_planned(eco: Ecosystem, n: int, backend: BackendConfig, run_id: str,
                  workers: int = 1) -> tuple[list[TaskRow], list[tuple[str, str, str]]]:
    """Plan ``n`` candidates (run seed 7) and build them on ``workers`` threads; returns
    the accepted tasks, after checking that the gate found each one sound, and the
    (stage, reason, detail) of each rejection."""
    candidates, _ = plan_candidates(eco, n, run_seed=7)
    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(
            lambda c: build_candidate(c, eco.spec.name, backend, run_id), candidates))
    accepted = [o.task for o in outcomes if o.task]
    for task in accepted:
        gate = task.gate
        assert gate.baseline_reward == 0.0 and gate.reference_reward == 1.0
        assert gate.reference_checks_passed == gate.checks_total > 0
    rejected = [(o.attempt.stage, o.attempt.reason, o.attempt.detail)
                for o in outcomes if not o.task]
    return accepted, rejected
