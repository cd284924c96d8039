"""Rollouts against a real OpenAI-compatible HTTP server scripted to play agents, in real
Docker sandboxes rebuilt from real tasks, scored by the tasks' own verifiers; the rows are
committed as shards and read back through the ``difficulty`` view in DuckDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from environments.local.config import LocalConfig
from tasks.dataset import Dataset
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.writer import ShardWriter
from tasks.exports.harbor.rebuild import fresh_environments
from tasks.exports.harbor.source import ExportTask, selected_tasks
from tasks.exports.sft import ExportError
from tasks.exports.sft.export import Options, export_sft
from tasks.exports.sft.preference import export_preference
from tasks.exports.sft.rows import hf_message
from tasks.rollouts.agent_loop import Limits
from tasks.rollouts.rollout import run_attempt
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import accepted
from tests.support.openai_server import Behaviour, OpenAIServer, make_client
from tests.support.scripted_agents import (
    bash,
    explore_then,
    give_up,
    malformed,
    reference_calls,
    replay,
)

pytestmark = pytest.mark.docker
LIMITS = Limits(max_turns=12, command_timeout_s=30, wall_s=300)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("solve") / "data"
    write_outcomes(root, "itest-solve", accepted(["files"], LocalConfig(), 1, "itest-solve"))
    return root


@pytest.fixture(scope="module")
def task(data: Path) -> ExportTask:
    return selected_tasks(data, None, [])[0]


def calls_of(data: Path, task_id: str, space: str) -> list[tuple[str, str]]:
    (messages,), = Dataset.open(data).rows(
        "select messages from trajectories where task_id = ? and action_space = ? and "
        "supervision = 'masked'", [task_id, space])
    return reference_calls(messages)


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def attempt(srv: OpenAIServer, task: ExportTask, index: int, space: str = "terminal", k: int = 2,
            model: str = "test-model"):
    client = make_client(srv, model=model)
    with fresh_environments(task, f"itest-solve-{index}") as box:
        return run_attempt(box, task, client, space, LIMITS, index, k, "itest-solve-run")


def test_scripted_agents_score_as_scripted_and_difficulty_reads_them(data, task, srv):
    calls = calls_of(data, task.row.task_id, "terminal")
    assert calls, "the reference trajectory calls tools"
    rows = []
    srv.default = Behaviour(message=replay(calls))
    rows.append(attempt(srv, task, 0))  # replays the reference
    srv.default = Behaviour(message=give_up)
    rows.append(attempt(srv, task, 1))
    srv.default = Behaviour(message=malformed)
    rows.append(attempt(srv, task, 2))
    srv.default = Behaviour(message=explore_then([bash("ls -la"), bash("pwd")],
                                                             calls))
    rows.append(attempt(srv, task, 3))
    srv.status(429).status(500).status(500)  # the client's 3 attempts, all failing
    rows.append(attempt(srv, task, 4))
    before = srv.request_count
    srv.status(429)
    srv.default = Behaviour(message=replay(calls))
    rows.append(attempt(srv, task, 5))  # retried once, then replays
    assert srv.request_count - before == len(calls) + 2

    got = [(r.attempt, r.stop_reason, r.reward) for r in rows]
    assert got == [(0, "solved", 1.0), (1, "gave_up", 0.0), (2, "malformed_call", 0.0),
                   (3, "solved", 1.0), (4, "endpoint_error", 0.0), (5, "solved", 1.0)]
    assert rows[0].n_turns == len(calls) + 1 and rows[3].n_turns == len(calls) + 3
    assert rows[0].checks_passed == rows[0].checks_total == len(task.checks)
    assert rows[1].checks_passed < rows[1].checks_total
    assert "arguments are not JSON" in rows[2].detail
    assert rows[2].messages[-1].role == "tool" and rows[2].messages[-1].content.startswith(
        "error:")
    assert "gave up after retries" in rows[4].detail and rows[4].n_turns == 0
    assert all(r.prompt_tokens > 0 for r in rows if r.stop_reason != "endpoint_error")
    assert rows[0].unchecked_changes == []  # the replay ends where the reference ends
    assert all(r.agent == "taskfactory" and len(r.turns or []) == r.n_turns for r in rows)
    assert rows[0].turns and all(t.prompt_tokens for t in rows[0].turns)
    lines = rows[0].verifier_lines or []
    assert len(lines) == rows[0].checks_total and all(x.startswith("PASS ") for x in lines)
    assert any(x.startswith("FAIL ") for x in rows[1].verifier_lines or [])
    tools = json.loads(rows[0].tools)
    assert [t["function"]["name"] for t in tools] == ["bash"]

    identity = RunIdentity(run_id="itest-solve-run", flow_run_id=None, config_hash="test",
                           llm_model="test-model", llm_params='{"temperature": 1.0}')
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, "itest-solve-run", max_rows=1)
        for r in rows:
            writer.add_group([("rollouts", r.model_copy(update={
                "provenance": identity.provenance(seed=task.row.seed, image_id=None)}))])
        writer.close()
    columns, result = Dataset.open(data).query(
        "select task_id, model, attempts, solved, k, pass_at_1, pass_at_k from difficulty "
        "where model = 'test-model'")
    # n = 6, c = 3, k = 2: pass@2 = 1 - C(3, 2) / C(6, 2) = 1 - 3/15
    assert result == [(task.row.task_id, "test-model", 6, 3, 2, 0.5, 0.8)]

    out = data.parent / "pairs.jsonl"
    assert export_preference(data, out) == 3
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    ids = {r.attempt: r.trajectory_id for r in rows}
    assert [(p["chosen_id"], p["rejected_id"]) for p in pairs] == [
        (ids[0], ids[1]), (ids[3], ids[2]), (ids[5], ids[4])]
    first = pairs[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["prompt"][1]["content"] == task.row.instruction
    assert first["chosen"] == [_hf(m) for m in rows[0].messages[2:]]
    assert first["rejected"] == [_hf(m) for m in rows[1].messages[2:]]

    sft = data.parent / "teacher.jsonl"
    options = Options(action_space="terminal", source="rollouts")
    assert export_sft(data, sft, options, warn=lambda _: None) == 3
    exported = [json.loads(line) for line in sft.read_text().splitlines()]
    assert sorted(r["trajectory_id"] for r in exported) == sorted([ids[0], ids[3], ids[5]])
    assert all(m["train"] == (m["role"] == "assistant") for r in exported
               for m in r["messages"])
    hard = replace(options, where="pass_at_k < 0.75")
    with pytest.raises(ExportError, match="matching --where pass_at_k < 0.75"):
        export_sft(data, sft, hard, warn=lambda _: None)
    assert export_sft(data, sft, replace(options, where="pass_at_k > 0.75"),
                      warn=lambda _: None) == 3
    # export harbor reads its tasks through the same condition
    assert [t.task_id for t in Dataset.open(data).task_rows("pass_at_k > 0.75")] == [
        task.row.task_id]
    assert Dataset.open(data).task_rows("pass_at_k < 0.75") == []


def test_a_solved_attempt_that_leaves_a_stray_entry_is_flagged_and_listed(data, task, srv):
    calls = calls_of(data, task.row.task_id, "terminal")
    srv.default = Behaviour(message=explore_then([bash("echo x > stray-notes.txt")], calls))
    row = attempt(srv, task, 0, model="hacker")
    assert (row.stop_reason, row.reward) == ("solved", 1.0)
    (entry,) = row.unchecked_changes
    assert entry.endswith("/stray-notes.txt")
    identity = RunIdentity(run_id="itest-hack", flow_run_id=None, config_hash="test")
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, "itest-hack")
        writer.add_group([("rollouts", row.model_copy(update={
            "provenance": identity.provenance(seed=task.row.seed, image_id=None)}))])
        writer.close()
    report = Dataset.open(data).report()
    hacks = report.split("## Possible reward hacks")[1]
    assert f"| {task.row.task_id} | hacker | 1 | {entry} |" in hacks
    histogram = report.split("## Difficulty (pass@k) per ecosystem and kind")[1].split("##")[0]
    assert f"| {task.row.ecosystem} | build | hacker |" in histogram


def _hf(m) -> dict:
    out = hf_message(m.model_dump(), "string")
    out.pop("train")
    out.pop("weight", None)
    return out


def test_function_space_replay_solves(data, task, srv):
    calls = calls_of(data, task.row.task_id, "function")
    srv.default = Behaviour(message=replay(calls))
    row = attempt(srv, task, 0, "function")
    assert (row.stop_reason, row.reward) == ("solved", 1.0)
    names = {t["function"]["name"] for t in json.loads(row.tools)}
    assert {name for name, _ in calls} <= names and "bash" not in names


def test_unknown_tool_is_a_malformed_call(data, task, srv):
    srv.default = Behaviour(message=lambda body: {"tool_calls": [{
        "id": "c1", "type": "function", "function": {"name": "rm_rf", "arguments": "{}"}}]})
    row = attempt(srv, task, 0, "function")
    assert (row.stop_reason, row.reward) == ("malformed_call", 0.0)
    assert "no tool named 'rm_rf'" in row.detail
