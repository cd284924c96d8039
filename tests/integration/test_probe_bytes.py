"""The hardened built-in probes print the same bytes as the probes before them
(``tests/fixtures/probes_before``) on honest states, so existing tasks and verifiers keep
their meaning: for each built-in, a sample of planned candidates (build and fix kinds, as a
run draws them) realized in one real sandbox, compared on the seeded state and after each
of the candidate's real steps; the new probe also run as the verifier runs it (in-process,
as root), which must print the same bytes again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from environments.ecosystems import Ecosystem, builtin_names, load_ecosystem
from environments.registry import make_provider
from environments.sandbox import Sandbox
from tasks.core.failures import StageFailure
from tasks.execute.realize import realize
from tasks.execute.steps import run_step
from tasks.plan.planner import plan_candidates
from tests.support.probe_runs import probe_before, run_probe_source, verifier_like

pytestmark = pytest.mark.docker

RUN_ID = f"itest-probe-bytes-{os.getpid()}"  # unique: other checkouts may share the engine
CANDIDATES = 10
"""Planned candidates per ecosystem (run seed 7): every one's seeded state and the state
after each step it runs are compared."""


@pytest.fixture(scope="module", params=builtin_names())
def opened(request) -> Iterator[tuple[Ecosystem, Sandbox]]:
    eco = load_ecosystem(request.param)
    provider = make_provider(verifier_like(eco), RUN_ID)
    try:
        yield eco, provider.open(labels={"test": "probe-bytes"})
    finally:
        provider.close()


def _same_bytes(eco: Ecosystem, sandbox: Sandbox, where: str) -> str:
    """The state's canonical JSON, after checking the three runs print it alike."""
    old = run_probe_source(sandbox, probe_before(eco.name))
    new = run_probe_source(sandbox, eco.probe_source)
    as_root = run_probe_source(sandbox, eco.probe_source, as_root=True)
    assert old.exit_code == 0, f"{where}: the old probe fails: {old.stderr[-300:]}"
    assert new.exit_code == 0, f"{where}: the new probe fails: {new.stderr[-300:]}"
    assert new.stdout == old.stdout, f"{where}: the new probe prints other bytes"
    assert as_root.stdout == new.stdout, f"{where}: in-process as root: {as_root.stderr[-300:]}"
    return new.stdout


def test_hardened_probe_prints_the_old_bytes_on_honest_states(
        opened: tuple[Ecosystem, Sandbox]) -> None:
    eco, sandbox = opened
    blank = sandbox.snapshot()
    candidates, _ = plan_candidates(eco, CANDIDATES, run_seed=7)
    compared, steps_run, kinds = 0, 0, set()
    for candidate in candidates:
        sandbox.restore(blank)
        realize(sandbox, eco, candidate.seed, fault=candidate.graph.fault)
        kinds.add("fix" if candidate.graph.fault else "build")
        states = [_same_bytes(eco, sandbox, f"seed {candidate.seed}")]
        outputs: dict[str, object] = {}
        for step in candidate.graph.steps:
            try:
                trace = run_step(sandbox, eco, candidate, step, outputs)
            except StageFailure:
                break  # a binding a repair would redraw: the state is still an honest one
            outputs[step.id] = trace.output
            steps_run += 1
            states.append(_same_bytes(eco, sandbox, f"seed {candidate.seed} {step.id}"))
        compared += len(states)
    assert steps_run >= CANDIDATES, f"only {steps_run} steps ran: the sample changed nothing"
    assert compared >= 2 * CANDIDATES and kinds == {"build", "fix"}, (compared, kinds)
