"""``solve`` against models that attack the verifier instead of doing the task: a scripted
model behind a real OpenAI-compatible HTTP server (started here) runs, as its ``bash``
calls, the three attacks that once took every reward under Harbor's runner — a process
left running that writes the reward file, a reconstruct program that writes it and kills
its parent, git configuration that makes a ``git`` run the agent's program — plus the
rest of the hostile control's attacks, in real Docker sandboxes rebuilt from real tasks.
Every attempt scores 0, and ``difficulty`` reads pass@1 = 0 for every task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from environments.docker.config import DockerConfig
from tasks.dataset import Dataset
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.writer import ShardWriter
from tasks.exports.harbor.rebuild import fresh_environments
from tasks.exports.harbor.source import ExportTask, selected_tasks
from tasks.gate.attacks import attack_script, attacks_for
from tasks.rollouts.agent_loop import Limits
from tasks.rollouts.rollout import run_attempt
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import accepted
from tests.support.openai_server import Behaviour, OpenAIServer, make_client
from tests.support.scripted_agents import bash, replay

pytestmark = pytest.mark.docker
RUN = "itest-solve-hostile"
LIMITS = Limits(max_turns=6, command_timeout_s=60, wall_s=300)
THE_THREE = {"reward_daemon", "hostile_program", "git_config_exec"}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("solve-hostile") / "data"
    outcomes = accepted(["files", "git"], DockerConfig(), 1, RUN)
    outcomes += accepted(["sql"], DockerConfig(), 1, RUN, kinds={"reconstruct": 1.0})
    write_outcomes(root, RUN, outcomes)
    return root


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def test_every_attack_as_a_model_scores_0_and_pass_at_1_is_0(data, srv):
    tasks: list[ExportTask] = selected_tasks(data, None, [])
    assert sorted((t.row.ecosystem, t.row.kind == "reconstruct") for t in tasks) == [
        ("files", False), ("git", False), ("sql", True)]
    rows, tried = [], set()
    for task in tasks:
        for attack in attacks_for(task.controlled):
            script = attack_script(task.controlled, [attack])
            srv.default = Behaviour(message=replay([bash(script)]))
            with fresh_environments(task, f"{RUN}-{len(rows)}") as box:
                row = run_attempt(box, task, make_client(srv, model="attacker"), "terminal",
                                  LIMITS, len(rows), 1, RUN)
            assert row.reward == 0.0, (task.row.task_id, attack.name, row.detail)
            assert row.stop_reason == "gave_up", (attack.name, row.stop_reason, row.detail)
            rows.append((task, row))
            tried.add(attack.name)
    assert tried >= THE_THREE
    identity = RunIdentity(run_id=RUN, flow_run_id=None, config_hash="test",
                           llm_model="attacker", llm_params="{}")
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, RUN, max_rows=1)
        for task, r in rows:
            writer.add_group([("rollouts", r.model_copy(update={
                "provenance": identity.provenance(seed=task.row.seed, image_id=None)}))])
        writer.close()
    _, result = Dataset.open(data).query(
        "select task_id, pass_at_1 from difficulty where model = 'attacker' order by 1")
    assert sorted(result) == sorted((t.row.task_id, 0.0) for t in tasks)
