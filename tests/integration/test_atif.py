"""ATIF out and in, checked with Harbor's own code.

A 40-task dataset (files, sql and git built on the local backend, service on Docker,
through the real pipeline) gets one rollout per task: scripted agents on two real
OpenAI-compatible HTTP servers (one reports usage, one does not) in real Docker
sandboxes, scored by the tasks' verifiers.  Its trajectories (every mode and action space)
and rollouts are exported through the CLI as Harbor trial folders and as JSONL, and
validated in a subprocess by the pydantic models of the ``harbor`` package in a venv of
its own (:mod:`tests.support.harbor_venv`); ``harbor view`` serves the folder over HTTP;
the documents turn back into the ``export sft --format hf`` rows; and trials written with
Harbor's models are imported into ``rollouts`` and counted by ``difficulty``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.cli import main
from schemas.records import Message, RolloutRow
from tasks.dataset import Dataset
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.writer import ShardWriter
from tasks.exports.atif.messages import chat_messages
from tasks.exports.atif.models import Trajectory
from tasks.exports.harbor.rebuild import fresh_environments
from tasks.exports.harbor.source import ExportTask, selected_tasks
from tasks.exports.sft.export import Options, export_sft
from tasks.exports.sft.rows import hf_message
from tasks.rollouts.agent_loop import Limits
from tasks.rollouts.rollout import run_attempt
from tasks.trajectories.render import supervise
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import accepted
from tests.support.harbor_venv import get, harbor_view, side
from tests.support.openai_server import Behaviour, OpenAIServer, make_client
from tests.support.scripted_agents import give_up, malformed, reference_calls, replay

pytestmark = [pytest.mark.docker, pytest.mark.timeout(3600)]  # 40 tasks built, then solved
RUN = f"itest-atif-{os.getpid()}"
LIMITS = Limits(max_turns=40, command_timeout_s=30, wall_s=300)
PLAN = [("replayer", "terminal", True), ("replayer", "function", False),
        ("quitter", "terminal", True), ("fumbler", "terminal", True)]
"""Per task (round robin): the model, its action space, and whether usage is reported."""
SPACES, MODES = ("function", "terminal"), ("masked", "full", "actobs")


def _agent(data: Path) -> object:
    """One scripted agent for every attempt: it plays the model the request names."""
    calls = {(instruction, space): reference_calls(messages) for instruction, space, messages
             in Dataset.open(data).rows(
                 "select t.instruction, j.action_space, j.messages from tasks t join "
                 "trajectories j using (task_id) where j.supervision = 'masked'")}

    def agent(body: dict) -> dict:
        if body["model"] == "quitter":
            return give_up(body)
        if body["model"] == "fumbler":
            return malformed(body)
        names = [t["function"]["name"] for t in body["tools"]]
        space = "terminal" if names == ["bash"] else "function"
        turn = replay(calls[(body["messages"][1]["content"], space)])(body)
        done = sum(m["role"] == "assistant" for m in body["messages"])
        return {**turn, "reasoning_content": f"Turn {done + 1}: what the last output says."}
    return agent


def _solve(data: Path) -> list[RolloutRow]:
    tasks = selected_tasks(data, None, [])
    agent = _agent(data)
    with OpenAIServer(Behaviour(message=agent)) as reported, \
            OpenAIServer(Behaviour(message=agent, usage=False)) as bare:
        def attempt(item: tuple[int, ExportTask]) -> RolloutRow:
            i, task = item
            model, space, usage = PLAN[i % len(PLAN)]
            client = make_client(reported if usage else bare, model=model)
            with fresh_environments(task, f"{RUN}-{i}") as box:
                return run_attempt(box, task, client, space, LIMITS, 0, 1, f"{RUN}-solve")

        with ThreadPoolExecutor(2) as pool:
            rows = list(pool.map(attempt, enumerate(tasks)))
    identity = RunIdentity(run_id=f"{RUN}-solve", flow_run_id=None, config_hash="test")
    seeds = {t.row.task_id: t.row.seed for t in tasks}
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, f"{RUN}-solve")
        writer.add_group([("rollouts", r.model_copy(update={"provenance": identity.provenance(
            seed=seeds[r.task_id], image_id=None)})) for r in rows])
        writer.close()
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atif") / "data"
    outcomes = accepted(["files", "sql", "git"], LocalConfig(), 10, RUN)
    outcomes += accepted(["service"], DockerConfig(), 10, RUN)
    write_outcomes(root, RUN, outcomes)
    return root


@pytest.fixture(scope="module")
def rollouts(data: Path) -> list[RolloutRow]:
    return _solve(data)


@pytest.fixture(scope="module")
def exported(data: Path, rollouts: list[RolloutRow],
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The CLI's exports: trial folders (trajectories and rollouts in one folder), JSONL."""
    out = tmp_path_factory.mktemp("atif-out")
    paths = {"trials": out / "jobs", "jsonl": out / "all.jsonl",
             "rollouts_jsonl": out / "rollouts.jsonl"}
    for extra in (["--out", paths["trials"]], ["--out", paths["trials"], "--rollouts"],
                  ["--out", paths["jsonl"], "--layout", "jsonl"],
                  ["--out", paths["rollouts_jsonl"], "--layout", "jsonl", "--rollouts"]):
        assert main(["export", "atif", "--data", str(data), *map(str, extra)]) == 0
    return paths


def _documents(path: Path) -> dict[str, Trajectory]:
    docs = [Trajectory.model_validate_json(line) for line in path.read_text().splitlines()]
    return {str(d.trajectory_id): d for d in docs}


def test_forty_tasks_make_forty_tasks_of_rollouts(data, rollouts):
    assert len(Dataset.open(data).task_rows()) == 40
    outcome = {(r.model, r.action_space): set() for r in rollouts}
    for r in rollouts:
        outcome[(r.model, r.action_space)].add(r.stop_reason)
    assert outcome == {("replayer", "terminal"): {"solved"}, ("replayer", "function"): {"solved"},
                       ("quitter", "terminal"): {"gave_up"},
                       ("fumbler", "terminal"): {"malformed_call"}}


def test_every_exported_document_validates_with_harbors_models(exported, harbor):
    counts = side(harbor, "validate", str(exported["trials"]), str(exported["jsonl"]),
                  str(exported["rollouts_jsonl"]))
    jobs = {f"trajectories-{s}-{m}": 40 for s in SPACES for m in MODES}
    jobs |= {"rollouts-terminal": 30, "rollouts-function": 10}
    assert counts["by_job"] == jobs
    assert counts["documents"] == counts["trial_configs"] == counts["trial_results"] == 280
    assert counts["jobs"] == 8 and counts["jsonl_documents"] == 240 + 40


def test_documents_turn_back_into_the_hf_rows(data, exported, tmp_path):
    docs = _documents(exported["jsonl"])
    compared = 0
    for space in SPACES:
        for mode in MODES:
            out = tmp_path / f"{space}-{mode}.jsonl"
            export_sft(data, out, Options("hf", mode, space), warn=lambda _: None)
            for row in map(json.loads, out.read_text().splitlines()):
                messages, _ = chat_messages(docs[row["trajectory_id"]])
                assert [hf_message(m.model_dump()) for m in messages] == row["messages"]
                compared += 1
    assert compared == len(docs) == 240


def test_rollout_documents_keep_model_usage_reward_and_verifier_lines(rollouts, exported):
    docs = _documents(exported["rollouts_jsonl"])
    trials = exported["trials"]
    for row in rollouts:
        doc = docs[row.trajectory_id]
        extra = doc.extra or {}
        assert (doc.agent.name, doc.agent.model_name) == ("taskfactory", row.model)
        assert (extra["reward"], extra["stop_reason"]) == (row.reward, row.stop_reason)
        messages, turns = chat_messages(doc)  # the whole attempt comes back
        assert supervise(messages, "masked") == row.messages and turns == row.turns
        agent = [s for s in doc.steps if s.source == "agent"]
        folder = trials / f"rollouts-{row.action_space}" / f"{extra['ecosystem']}-" \
            f"{row.task_id}__{row.trajectory_id}"
        result = json.loads((folder / "result.json").read_text())
        assert result["verifier_result"]["rewards"]["reward"] == row.reward
        stdout = (folder / "verifier" / "test-stdout.txt").read_text().splitlines()
        assert stdout[:-1] == row.verifier_lines and row.verifier_lines
        if row.model == "replayer" and row.action_space == "terminal":  # usage reported
            assert all(s.metrics and s.metrics.prompt_tokens for s in agent)
            assert doc.final_metrics and doc.final_metrics.total_prompt_tokens == sum(
                s.metrics.prompt_tokens for s in agent if s.metrics)
        if row.model == "replayer" and row.action_space == "function":  # no usage
            assert all(s.metrics and s.metrics.prompt_tokens is None for s in agent)
            assert all(s.reasoning_content and s.reasoning_content.startswith("Turn")
                       for s in agent)
            assert doc.final_metrics and doc.final_metrics.total_prompt_tokens is None
        if row.model == "quitter":
            assert any(line.startswith("FAIL ") for line in row.verifier_lines or [])
        if row.model == "fumbler":
            (call,) = agent[-1].tool_calls or []
            assert call.arguments == {} and call.extra == {"raw_arguments": "{'command': ls"}


def test_harbor_view_serves_the_exported_folder(rollouts, exported, harbor):
    docs = _documents(exported["rollouts_jsonl"])
    quitter = next(r for r in rollouts if r.model == "quitter")
    with harbor_view(harbor, exported["trials"]) as url:
        status, page = get(f"{url}/")
        assert status == 200 and b"<html" in page.lower()
        jobs = json.loads(get(f"{url}/api/jobs")[1])
        assert jobs["total"] == 8
        listed = json.loads(get(f"{url}/api/jobs/rollouts-terminal/trials?page_size=100")[1])
        assert listed["total"] == 30
        rewards = {t["name"].rpartition("__")[2]: t["reward"] for t in listed["items"]}
        assert rewards == {r.trajectory_id: r.reward for r in rollouts
                           if r.action_space == "terminal"}
        trial = next(t["name"] for t in listed["items"] if t["name"].endswith(
            quitter.trajectory_id))
        served = json.loads(get(f"{url}/api/jobs/rollouts-terminal/trials/{trial}/"
                                "trajectory")[1])
        assert len(served["steps"]) == len(docs[quitter.trajectory_id].steps)
        verifier = json.loads(get(f"{url}/api/jobs/rollouts-terminal/trials/{trial}/"
                                  "verifier-output")[1])
        assert "FAIL " in json.dumps(verifier)


@pytest.fixture
def harbor_trials(data: Path, harbor: Path, tmp_path: Path) -> Iterator[tuple[Path, dict]]:
    """Ten trials of exported tasks, written with Harbor's models; rewards 1, 0, 1, ..."""
    tasks = tmp_path / "tasks"
    assert main(["export", "harbor", "--data", str(data), "--out", str(tasks), "--where",
                 "ecosystem in ('files', 'sql')"]) == 0
    folders = sorted(tasks.iterdir())[:10]
    items = [{"task_path": str(f), "instruction": (f / "instruction.md").read_text(),
              "reward": float(i % 2 == 0), "name": f"{f.name[:32]}__trial{i}"}
             for i, f in enumerate(folders)]
    jobs = tmp_path / "jobs" / "harbor-job"
    assert side(harbor, "trials", str(jobs), stdin=json.dumps(items)) == {"written": 10}
    yield jobs, {f.name.partition("-")[2]: item["reward"] for f, item in zip(
        folders, items, strict=True)}


def test_import_adds_harbor_trials_that_difficulty_counts(data, harbor_trials, tmp_path,
                                                          capsys):
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    jobs, rewards = harbor_trials
    bad = jobs / "broken__trial" / "agent"
    bad.mkdir(parents=True)
    (bad / "trajectory.json").write_text(json.dumps({
        "schema_version": "ATIF-v1.6", "agent": {"name": "terminus-2", "version": "2"},
        "steps": [{"step_id": 1, "source": "user", "message": "x",
                   "reasoning_content": "a user does not reason here"}]}))
    manifest = (copy / "_manifest.json").read_bytes()
    capsys.readouterr()
    assert main(["import", "atif", str(jobs.parent), "--data", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken__trial/agent/trajectory.json" in err
    assert "reasoning_content" in err and (copy / "_manifest.json").read_bytes() == manifest

    shutil.rmtree(bad.parent)
    assert main(["import", "atif", str(jobs.parent), "--data", str(copy)]) == 0
    assert "imported 10 rollouts (terminus-2:openai/scripted-model 10)" in \
        capsys.readouterr().out
    dataset = Dataset.open(copy)
    got = dict(dataset.rows("select task_id, reward from rollouts where agent = 'terminus-2' "
                            "and stop_reason = 'imported'"))
    assert got == rewards
    _, counted = dataset.query("select task_id, attempts, solved from difficulty "
                               "where model = 'terminus-2:openai/scripted-model'")
    assert {t: (a, s) for t, a, s in counted} == {t: (1, int(r)) for t, r in rewards.items()}
    (length,) = {len(m) for (m,) in dataset.rows(
        "select messages from rollouts where agent = 'terminus-2'")}
    assert length == 4  # the user's, the agent's call and its result, the agent's last
    assert main(["import", "atif", str(jobs.parent), "--data", str(copy)]) == 0
    assert "imported 0 rollouts (none)" in capsys.readouterr().out
    teacher = tmp_path / "teacher.jsonl"  # another agent's attempts are no teacher data
    export_sft(copy, teacher, Options(action_space="terminal", source="rollouts"),
               warn=lambda _: None)
    taught = {json.loads(line)["trajectory_id"] for line in teacher.read_text().splitlines()}
    imported = {t for (t,) in dataset.rows("select trajectory_id from rollouts where "
                                           "agent = 'terminus-2' and reward = 1")}
    assert taught and imported and not taught & imported


def test_imported_messages_are_chat_messages(harbor_trials):
    jobs, _ = harbor_trials
    doc = Trajectory.model_validate_json(next(jobs.glob("*/agent/trajectory.json")).read_text())
    messages, turns = chat_messages(doc)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].name == "bash_command" and messages[2].tool_call_id == "call_0_1"
    assert [t.prompt_tokens for t in turns] == [812, 901]
    assert isinstance(messages[0], Message) and turns[0].reasoning_content
