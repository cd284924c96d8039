"""Collateral damage fails: the verifier checks that every seeded entry a task leaves alone
is unchanged, also in a user ecosystem whose probe section is not strict, and the gate's
vandal control proves it for each task.

The ecosystem is a copy of the ``inventory`` fixture (stock ledgers as files) with its
``files`` section made non-strict, on the local backend (the built-ins run the same
controls in Docker throughout the suite).
"""

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from environments.local.config import LocalConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.execute.realize import LiveEnvironment
from tasks.plan.planner import plan_candidates
from tasks.verify.verifier import run_verifier

INVENTORY = Path("tests/fixtures/ecosystems/inventory")
RUN_ID = f"itest-collateral-{os.getpid()}"
RM = "rm -f -- {{ key }}"


def _inventory(tmp_path: Path, **section) -> str:
    """A copy of the inventory fixture whose ``files`` section is non-strict, plus
    ``section``'s fields."""
    folder = tmp_path / "inventory"
    shutil.copytree(INVENTORY, folder)
    spec = yaml.safe_load((folder / "ecosystem.yaml").read_text())
    spec["probe_sections"]["files"] = {"compare": "text", "strict": False, **section}
    (folder / "ecosystem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(folder)


def _outcomes(ref: str, n: int = 6) -> list:
    candidates, _ = plan_candidates(ecosystem(ref), n, 7)
    try:
        return [build_candidate(c, ref, LocalConfig(), RUN_ID) for c in candidates]
    finally:
        close_run(RUN_ID)


def _kept_files(task) -> list[str]:
    return sorted(key for c in _checks(task) if c.kind == "unchanged" and c.section == "files"
                  for key in c.expected)


def _checks(task) -> list[Check]:
    return [Check.model_validate(c) for c in json.loads(task.checks_json)]


def _score_after_deleting(ref: str, task, path: str):
    """The task's verifier after its reference solution and ``rm path``."""
    eco = ecosystem(ref)
    trace = Trace.model_validate_json(task.trace_json)
    config = LocalConfig().for_ecosystem(eco)
    try:
        with LiveEnvironment(eco, task.seed, lambda packages: provider_for(
                config, RUN_ID).sandbox(), trace.environment, task.fault) as env:
            sb = env.sandbox
            done = sb.exec(["bash", "-s"], stdin=task.solution_sh.encode(),
                           env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=60)
            assert done.exit_code == 0, done.stderr
            assert run_verifier(sb, task.verifier_py).reward == 1
            sb.exec(["rm", "-f", "--", path], timeout=30)
            return run_verifier(sb, task.verifier_py)
    finally:
        close_run(RUN_ID)


def test_deleting_a_seeded_file_after_the_reference_scores_0_in_a_non_strict_section(
        tmp_path):
    ref = _inventory(tmp_path)
    tasks = [o.task for o in _outcomes(ref) if o.task]
    assert tasks, "no inventory task was accepted"
    task = tasks[0]
    kept = _kept_files(task)
    assert kept, "the verifier keeps none of the seeded ledgers"
    result = _score_after_deleting(ref, task, kept[0])
    assert (result.reward, result.checks_passed) == (0, result.checks_total - 1)
    # no section declares how to vandalize it, so the control does not apply
    assert all(t.gate.vandal_reward is None for t in tasks)
    assert not any(t.template_id.split("/")[-1].startswith("u") for t in tasks)


def test_the_vandal_control_runs_for_a_user_ecosystem_that_declares_it(tmp_path):
    tasks = [o.task for o in _outcomes(_inventory(tmp_path, vandal=[RM])) if o.task]
    assert tasks and all(t.gate.vandal_reward == 0 for t in tasks), \
        [t.gate for t in tasks]


def test_a_change_the_verifier_cannot_see_rejects_the_task_naming_the_command(tmp_path):
    outcomes = _outcomes(_inventory(tmp_path, vandal=["touch {{ key }}"]))
    assert not any(o.task for o in outcomes)
    vandalized = [o.attempt for o in outcomes if o.attempt.reason == "vandal_passed"]
    assert len(vandalized) >= 4, [(o.attempt.reason, o.attempt.detail) for o in outcomes]
    assert all(a.stage == "validate" for a in vandalized)
    detail = vandalized[0].detail
    assert detail.startswith("the verifier passes after the reference solution and `touch "
                             "stock/"), detail
    assert "which ran with exit 0" in detail, detail


def test_a_section_that_opts_out_is_neither_checked_nor_promised(tmp_path):
    ref = _inventory(tmp_path, preserved=False)
    tasks = [o.task for o in _outcomes(ref) if o.task]
    assert tasks and all(t.template_id.split("/")[-1] in ("u1", "u2") for t in tasks)
    assert all(not _kept_files(t) for t in tasks)
    task = tasks[0]
    changed = {c.key for c in _checks(task) if c.kind == "state"}
    untouched = sorted(set(ecosystem(ref).seed_state(task.seed)) - changed)
    assert untouched
    assert _score_after_deleting(ref, task, untouched[0]).reward == 1


@pytest.fixture(autouse=True)
def _closed():
    yield
    close_run(RUN_ID)
