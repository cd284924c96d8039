"""The hostile control on the real engine: agents that attack the verifier instead of
doing the task score 0 — each attack alone and all together, on every built-in ecosystem
and on reconstruct tasks, in the gate (a Docker sandbox) and in ``check-harbor`` (a
container of the exported image, the verifier run by ``tests/test.sh`` as root as
Harbor's runner runs it).  A verifier without its seal, or run without ``--agent-user``,
is caught by the same control."""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest

from environments.docker.backend import RUN_LABEL
from environments.docker.config import DockerConfig
from environments.docker.harbor_container import remove_run
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from schemas.graph import Candidate
from tasks.exports.harbor.check import build_image, check_folder
from tasks.exports.harbor.export import ExportOptions, render_folder, write_folder
from tasks.exports.harbor.host import ContainerHost
from tasks.exports.harbor.source import ExportTask
from tasks.gate import attacks
from tasks.gate.attacks import attack_script, attacks_for
from tasks.gate.controls import control_named
from tasks.pipeline import Outcome
from tasks.plan.planner import plan_candidates
from tasks.verify import verifier as verify
from tests.support.harbor_data import SHALLOW

pytestmark = pytest.mark.docker
RUN = f"itest-hostile-{os.getpid()}"
BUILD = ["files", "sql", "git", "service"]
RECONSTRUCT = ["files", "sql", "git"]


class Accepted:
    """A candidate and the outcome of building it: an accepted task."""

    def __init__(self, candidate: Candidate, outcome: Outcome) -> None:
        assert outcome.task is not None
        self.candidate, self.task = candidate, outcome.task


def _first_accepted(ref: str, reconstruct: bool) -> Accepted:
    kinds = {"reconstruct": 1.0} if reconstruct else None
    candidates, _ = plan_candidates(ecosystem(ref), 8, 3, SHALLOW, kinds)
    for candidate in candidates:
        outcome = build_candidate(candidate, ref, DockerConfig(), RUN)
        if outcome.task is not None:
            return Accepted(candidate, outcome)
    pytest.fail(f"no {ref} candidate was accepted")


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Accepted]:
    """One accepted task per built-in ecosystem, and one reconstruct task per ecosystem
    that has the kind: ``files``, ``reconstruct-files``, ..."""
    try:
        made = {ref: _first_accepted(ref, False) for ref in BUILD}
        made |= {f"reconstruct-{ref}": _first_accepted(ref, True) for ref in RECONSTRUCT}
    finally:
        close_run(RUN)
    return made


@pytest.fixture(scope="module")
def engine():
    client = docker.from_env(timeout=900)
    yield client
    remove_run(client, RUN)
    close_run(RUN)
    client.close()


def export_task(outcome: Accepted, out: Path) -> tuple[ExportTask, Path]:
    task = ExportTask.of(outcome.task, ecosystem(outcome.task.ecosystem))
    return task, write_folder(out, task.folder_name, render_folder(task, ExportOptions()))


KINDS = BUILD + [f"reconstruct-{e}" for e in RECONSTRUCT]


@pytest.mark.parametrize("kind", KINDS)
def test_the_gate_records_hostile_reward_0_for_each_kind(outcomes, kind):
    gate = outcomes[kind].task.gate
    assert gate.hostile_reward == 0.0 and gate.reference_reward == 1.0


def test_the_attacks_cover_every_ecosystem_and_kind(outcomes):
    named = {kind: {a.name for a in attacks_for(ExportTask.of(
        o.task, ecosystem(o.task.ecosystem)).controlled)} for kind, o in outcomes.items()}
    assert len({a.name for a in attacks.ATTACKS}) >= 10
    assert {a.name for a in attacks.ATTACKS} == set().union(*named.values())
    assert "git_config_exec" in named["git"] and "cover_up" in named["git"]
    assert "fake_service" in named["service"] and "output_links" in named["sql"]
    assert all("hostile_program" in named[f"reconstruct-{e}"] for e in RECONSTRUCT)


@pytest.mark.parametrize("kind", KINDS)
def test_each_attack_alone_scores_0_in_the_gate(outcomes, kind, monkeypatch):
    """The candidate built again with one attack at a time in the hostile control."""
    outcome = outcomes[kind]
    task = ExportTask.of(outcome.task, ecosystem(outcome.task.ecosystem)).controlled
    for attack in attacks_for(task):
        monkeypatch.setattr(attacks, "ATTACKS", (attack,))
        again = build_candidate(outcome.candidate, outcome.task.ecosystem, DockerConfig(), RUN)
        assert again.task is not None, (attack.name, again.attempt.detail)
        assert again.task.gate.hostile_reward == 0.0, attack.name


@pytest.mark.parametrize("kind", ["git", "reconstruct-sql"])
def test_each_attack_alone_scores_0_in_check_harbor(outcomes, kind, engine, tmp_path):
    task, folder = export_task(outcomes[kind], tmp_path)
    image = f"taskfactory/harbor-check:{task.row.task_id}-{RUN}"
    host = ContainerHost(engine, image, folder, task, RUN)
    build_image(engine, folder / "environment", image, host.cfg.build_timeout, RUN)
    controlled = task.controlled
    for attack in attacks_for(controlled):
        with host.start():
            host.solve(attack_script(controlled, [attack]))
            assert host.score().reward == 0.0, attack.name


@pytest.mark.parametrize("kind", KINDS)
def test_check_harbor_runs_the_hostile_control_and_it_scores_0(outcomes, kind, engine,
                                                                tmp_path):
    task, folder = export_task(outcomes[kind], tmp_path)
    report = check_folder(engine, folder, task, RUN)
    hostile = [c for c in report.controls if c.name == "hostile"]
    assert len(hostile) == 1 and hostile[0].reward == 0.0 and hostile[0].ok, hostile
    assert report.ok, (report.error, report.identity, report.controls)


def _unsealed(text: str, logs_too: bool = True) -> str:
    """A verifier whose seal stops nothing (and, ``logs_too``, takes nothing over: as
    verifiers were)."""
    weak = text.replace("def stop_agent(uid, within=STOP_WITHIN_S):",
                        "def stop_agent(uid, within=STOP_WITHIN_S):\n    return\n")
    if logs_too:
        weak = weak.replace("def take_logs(path):", "def take_logs(path):\n    return\n")
    assert weak != text
    return weak


def test_the_hostile_control_leaves_its_container_to_the_next_candidate(outcomes, engine):
    """After the attacks (the last control) the container is reset and kept for the run's
    next candidate.  Before, the verifier killer's ``pkill`` also ended the agent's own
    runner (its command line matches a verifier's), only the container's first runner
    could reset it, and every candidate paid for a new container."""
    run = f"{RUN}-reuse"
    try:
        outcome = build_candidate(outcomes["files"].candidate, "files", DockerConfig(), run)
        assert outcome.task is not None and outcome.task.gate.hostile_reward == 0.0
        kept = engine.containers.list(filters={"label": f"{RUN_LABEL}={run}"})
        assert len(kept) >= 1
    finally:
        close_run(run)
    assert engine.containers.list(filters={"label": f"{RUN_LABEL}={run}"}) == []


def test_a_verifier_that_stops_nothing_is_rejected_as_hackable_in_the_gate(outcomes,
                                                                           monkeypatch):
    """Honest controls leave no process behind, so only the hostile control sees it."""
    outcome = outcomes["files"]
    monkeypatch.setattr(verify, "_SEAL", _unsealed(verify._SEAL, logs_too=False))
    again = build_candidate(outcome.candidate, "files", DockerConfig(), RUN)
    a = again.attempt
    assert (a.status, a.stage, a.reason) == ("rejected", "validate", "hackable"), a.detail
    assert "taken by: " in a.detail and "reward_daemon" in a.detail.split("taken by: ")[1]


def test_a_verifier_that_leaves_its_logs_folder_open_fails_even_the_nop_control(outcomes,
                                                                                monkeypatch):
    """Whatever the agent does, a reward it could still write counts as taken."""
    outcome = outcomes["files"]
    monkeypatch.setattr(verify, "_SEAL", _unsealed(verify._SEAL))
    a = build_candidate(outcome.candidate, "files", DockerConfig(), RUN).attempt
    assert (a.status, a.stage, a.reason) == ("rejected", "validate", "baseline_passed")


@pytest.mark.parametrize("kind", ["files", "reconstruct-files"])
def test_check_harbor_catches_an_unsealed_verifier(outcomes, kind, engine, tmp_path):
    """The exported verifier weakened as verifiers were: without the seal (a build task),
    or the agent's program run as root (a reconstruct task's test.sh without
    --agent-user): the hostile control takes the reward."""
    task, folder = export_task(outcomes[kind], tmp_path)
    if kind == "files":
        tests = folder / "tests" / "verify.py"
        tests.write_text(_unsealed(tests.read_text()))
    else:
        tests = folder / "tests" / "test.sh"
        tests.write_text(tests.read_text().replace(" --agent-user 1000:1000", ""))
    report = check_folder(engine, folder, task, RUN)
    (hostile,) = [c for c in report.controls if c.name == "hostile"]
    assert hostile.reward == 1.0 and not hostile.ok, hostile
    taken = control_named("hostile")
    assert taken.reason == "hackable"


def test_a_reconstruct_program_cannot_read_the_verifier_or_keep_a_process(outcomes,
                                                                           engine, tmp_path):
    """The program the verifier runs (as the agent's user) finds no hidden case and leaves
    nothing running: a peek that would copy the expected outputs gets nothing."""
    task, folder = export_task(outcomes["reconstruct-files"], tmp_path)
    image = f"taskfactory/harbor-check:{task.row.task_id}-{RUN}"
    host = ContainerHost(engine, image, folder, task, RUN)
    build_image(engine, folder / "environment", image, host.cfg.build_timeout, RUN)
    spy = "\n".join([
        "#!/usr/bin/env bash",
        "{ id -u; cat /tests/verify.py >/dev/null 2>&1 && echo read-tests || echo no-tests;",
        "  ls /tests >/dev/null 2>&1 && echo listed || echo unlisted; } >> /tmp/spy.txt",
        "sleep 600 &", "exit 0"])
    with host.start() as box:
        host.solve(f"cd /workspace && mkdir -p solution && printf '%s' '{spy}' > solution/run.sh")
        score = host.score()
        seen = box.exec("cat /tmp/spy.txt; ps -eo uid,args | grep -c '[s]leep 600'",
                        user="root", timeout=30).output.split()
    assert score.reward == 0.0
    assert seen[:3] == ["1000", "no-tests", "unlisted"] and seen[-1] == "0", seen
