"""The hard tier's rules in the validate stage, on the real engine: a hard candidate whose
graph holds fewer looked-up values than the tier asks is rejected before the gate runs."""

from __future__ import annotations

import os

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import load_ecosystem
from flows.run.candidate import build_candidate
from flows.run.providers import close_run
from tasks.plan.lookups import looked_up
from tasks.plan.planner import plan_candidates
from tasks.plan.tiers import HARD_MIN_LOOKUPS

pytestmark = pytest.mark.docker

RUN = f"itest-hard-gate-{os.getpid()}"


def test_a_hard_candidate_with_too_few_lookups_is_rejected_before_the_gate():
    eco = load_ecosystem("sql")
    candidates, _ = plan_candidates(eco, 8, 7, kinds={"build": 1.0})
    plain = next(c for c in candidates if looked_up(eco, c.graph) < HARD_MIN_LOOKUPS)
    try:
        medium = build_candidate(plain, "sql", DockerConfig(), RUN)
        hard = build_candidate(plain.model_copy(update={"tier": "hard"}), "sql", DockerConfig(),
                               RUN)
    finally:
        close_run(RUN)
    assert medium.task is not None, medium.attempt
    assert hard.task is None
    assert (hard.attempt.stage, hard.attempt.reason, hard.attempt.tier) == (
        "validate", "too_few_lookups", "hard")
    assert hard.attempt.gate_s < medium.attempt.gate_s / 2  # no control ran
