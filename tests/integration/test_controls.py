"""One list of controls: a control added to ``tasks.gate.controls.CONTROLS`` runs in the gate
(a Docker sandbox) and in ``check-harbor`` (a container of the exported image), and its
verdict counts in both — on the real engine."""

import os

import docker
import pytest

from environments.docker.config import DockerConfig
from environments.docker.harbor_container import remove_run
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from tasks.exports.harbor.check import check_folder
from tasks.exports.harbor.export import ExportOptions, render_folder, write_folder
from tasks.exports.harbor.source import ExportTask
from tasks.gate import controls
from tasks.gate.controls import Acted, Control
from tasks.gate.shortcuts import Shortcut
from tasks.plan.planner import plan_candidates
from tests.support.harbor_data import SHALLOW

pytestmark = pytest.mark.docker
RUN = f"itest-controls-{os.getpid()}"


@pytest.fixture(scope="module")
def accepted(tmp_path_factory):
    """A candidate the factory accepts with today's controls, and its exported folder."""
    candidates, _ = plan_candidates(ecosystem("files"), 4, 5, SHALLOW)
    try:
        for candidate in candidates:
            outcome = build_candidate(candidate, "files", DockerConfig(), RUN)
            if outcome.task is not None:
                break
        else:
            pytest.fail("no files candidate was accepted")
    finally:
        close_run(RUN)
    task = ExportTask.of(outcome.task, ecosystem("files"))
    out = tmp_path_factory.mktemp("harbor")
    folder = write_folder(out, task.folder_name, render_folder(task, ExportOptions()))
    return candidate, task, folder


@pytest.fixture
def engine():
    client = docker.from_env(timeout=900)
    yield client
    remove_run(client, RUN)
    close_run(RUN)
    client.close()


def _added(monkeypatch, control: Control) -> None:
    monkeypatch.setattr(controls, "CONTROLS", (*controls.CONTROLS, control))


def test_an_added_control_runs_in_the_gate_and_in_check_harbor(accepted, engine, monkeypatch):
    candidate, task, folder = accepted
    hosts = []

    def unrequested(host, t):  # nothing asked for is done, one unasked-for file is made
        hosts.append(type(host).__name__)
        host.apply(Shortcut(commands=["echo x > unrequested.txt"]))
        return Acted()

    _added(monkeypatch, Control("unrequested", unrequested, "fail", "empty_outputs_passed",
                                "unrequested work passes ({passed}/{total} checks)"))
    outcome = build_candidate(candidate, "files", DockerConfig(), RUN)
    assert outcome.task is not None and outcome.task.task_id == task.row.task_id
    assert hosts == ["SandboxHost"]
    report = check_folder(engine, folder, task, RUN)
    assert hosts == ["SandboxHost", "ContainerHost"], report.error
    assert [c.name for c in report.controls][-1] == "unrequested"
    added = report.controls[-1]
    assert added.reward == 0 and added.ok, added
    assert report.ok, (report.identity, report.error)


def test_an_added_control_that_scores_otherwise_fails_in_both(accepted, engine, monkeypatch):
    candidate, task, folder = accepted
    _added(monkeypatch, Control("expects-a-pass", lambda host, t: Acted(), "pass",
                                "reference_failed", "doing nothing scores {passed}/{total}"))
    outcome = build_candidate(candidate, "files", DockerConfig(), RUN)
    a = outcome.attempt
    assert outcome.task is None
    assert (a.status, a.stage, a.reason) == ("rejected", "validate", "reference_failed")
    kept = sum(c.kind == "unchanged" for c in task.checks)  # nothing done keeps them
    assert kept and a.detail.startswith(f"doing nothing scores {kept}/"), a.detail
    report = check_folder(engine, folder, task, RUN)
    added = report.controls[-1]
    assert (added.name, added.reward, added.ok) == ("expects-a-pass", 0.0, False)
    assert not report.ok and report.identical
    assert all(c.ok for c in report.controls[:-1])
