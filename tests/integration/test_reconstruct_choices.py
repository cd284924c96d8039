"""Hidden cases test the rule, in Docker: a reconstruct program that picks "the CSV file
under data/ with the most lines" meets, in a hidden case, another file than in the
examples; a program hard-coding the examples' file scores 0 (the gate's and check-harbor's
``hardcoded`` control, and a hand-written one run with the task's own verifier); and a
choice no seed resolves to another entry rejects its candidate."""

import json
import os

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from tasks.reconstruct.cases import CHOICE_TRIES
from tasks.reconstruct.program import installer
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import taskfactory

pytestmark = pytest.mark.docker

RUN_ID = f"itest-reconstruct-choices-{os.getpid()}"
ORDERS = "data/orders.csv"
LONGEST = "the CSV file under `data/` with the most lines"
# a seed whose longest CSV is orders.csv, as it is on most seeds (customers.csv on ~9%)
FILES_SEED = 358399299


def _candidate(eco: str, steps: list[Step], seed: int) -> Candidate:
    graph = WorkflowGraph(ecosystem=eco, shape="chain", steps=steps, reconstruct=True)
    return Candidate(candidate_id=f"choices-{eco}", index=0, ecosystem=eco, seed=seed,
                     graph=graph)


@pytest.fixture(scope="module")
def built():
    """files: the checksum of the longest CSV under data/; sql: the longest CSV under
    incoming/, which is shipments.csv on every seed of the ecosystem."""
    files = _candidate("files", [
        Step(id="s1", tool="longest_csv", bind={}),
        Step(id="s2", tool="checksum", bind={"path": Binding(kind="step", step="s1")})],
        FILES_SEED)
    sql = _candidate("sql", [Step(id="s1", tool="longest_incoming_csv", bind={})], 3)
    try:
        yield {c.ecosystem: build_candidate(c, c.ecosystem, DockerConfig(), RUN_ID)
               for c in (files, sql)}
    finally:
        close_run(RUN_ID)


@pytest.fixture(scope="module")
def task(built):
    outcome = built["files"]
    assert outcome.task is not None, (outcome.attempt.reason, outcome.attempt.detail)
    return outcome.task


def test_a_hidden_case_resolves_the_choice_to_another_file_than_the_examples(task):
    cases = json.loads(task.cases_json)
    public = {c["choices"]["s1"] for c in cases if c["public"]}
    hidden = [c["choices"]["s1"] for c in cases if not c["public"]]
    assert public == {ORDERS} and len(hidden) == 3
    assert set(hidden) - public == {"data/customers.csv"}, cases


def test_the_instruction_states_the_rule_and_never_the_examples_file(task):
    assert f"the SHA-256 checksum of {LONGEST}" in task.instruction
    assert ORDERS not in task.instruction and "case-a`)" not in task.instruction


def test_the_hardcoded_control_scores_0_in_the_gate(task):
    gate = task.gate
    assert gate.reference_reward == 1.0 and gate.memorizer_reward == 0.0
    assert gate.hardcoded_reward == 0.0


def _reward(sb, task, program: str) -> dict:
    """The task's verifier on ``program`` installed in the agent's workspace."""
    done = sb.exec(["bash", "-s"], stdin=installer(program).encode(),
                   env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=60)
    assert done.exit_code == 0, done.stderr
    result = sb.exec(["python3", "-", "--root", ".", "--logs", "/tmp/logs"],
                     stdin=task.verifier_py.encode(), timeout=300)
    reward = json.loads(sb.read_file("/tmp/logs/reward.json"))
    assert result.exit_code == (0 if reward["reward"] == 1 else 1), result.stderr
    return reward


ALWAYS_ORDERS = """#!/usr/bin/env bash
set -euo pipefail
cd "$1"
sha256sum data/orders.csv | cut -c1-64 > answer.txt
"""
# another route to the rule: Python finds the longest CSV (ties: the first path)
LONGEST_CSV = """#!/usr/bin/env bash
set -euo pipefail
cd "$1"
longest=$(python3 -c 'import glob; print(max(sorted(glob.glob("data/*.csv")),
  key=lambda f: open(f, "rb").read().count(b"\\n")))')
sha256sum "$longest" | cut -c1-64 > answer.txt
"""


def test_a_program_that_always_reads_orders_csv_scores_0_with_the_tasks_verifier(task):
    eco = ecosystem("files")
    with provider_for(DockerConfig().for_ecosystem(eco), RUN_ID).sandbox() as sb:
        hard = _reward(sb, task, ALWAYS_ORDERS)
        rule = _reward(sb, task, LONGEST_CSV)
    assert hard["reward"] == 0 and hard["cases_passed"] == 2 and hard["cases_total"] == 3
    assert rule["reward"] == 1 and rule["cases_passed"] == 3


def test_check_harbor_runs_the_hardcoded_control_and_it_scores_0(built, task, tmp_path):
    data, out, report = tmp_path / "data", tmp_path / "harbor", tmp_path / "report.json"
    write_outcomes(data, RUN_ID, [built["files"]])
    proc = taskfactory("export", "harbor", "--data", data, "--out", out)
    assert proc.returncode == 0, proc.stderr
    proc = taskfactory("check-harbor", out, "--data", data, "--report", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [folder] = json.loads(report.read_text())
    rewards = {c["name"]: c["reward"] for c in folder["controls"]}
    assert folder["ok"] and rewards["hardcoded"] == 0.0 and rewards["reference"] == 1.0


def test_a_choice_that_no_seed_resolves_to_another_entry_rejects_the_candidate(built):
    outcome = built["sql"]
    attempt = outcome.attempt
    assert outcome.task is None and attempt.status == "rejected"
    assert (attempt.stage, attempt.reason) == ("cases", "choice_untested")
    assert attempt.detail.startswith("s1 longest_incoming_csv resolves to incoming/"
                                     "shipments.csv on every one of the "
                                     f"{CHOICE_TRIES + 1} seeds")
