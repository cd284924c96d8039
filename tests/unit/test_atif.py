"""ATIF without Docker: the format's rules, a rollout's round trip, and every way
``export atif`` and ``import atif`` refuse bad input (one line, exit 2, nothing written).
The dataset is the session's SFT dataset (real candidates in local sandboxes); imports
write to a copy of it."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from flows.cli import main
from schemas.records import FunctionCall, Message, RolloutRow, RolloutTurn, ToolCall
from tasks.dataset import Dataset
from tasks.exports.atif.documents import rollout_document
from tasks.exports.atif.messages import chat_messages
from tasks.exports.atif.models import Trajectory

AGENT = {"name": "a", "version": "1"}
USER = {"step_id": 1, "source": "user", "message": "hi"}


def _doc(**changes: object) -> dict:
    return {"schema_version": "ATIF-v1.7", "agent": AGENT, "steps": [USER], **changes}


def _agent_step(**changes: object) -> dict:
    return {"step_id": 2, "source": "agent", "message": "", **changes}


@pytest.mark.parametrize(("doc", "why"), [
    (_doc(surprise=1), "Extra inputs"),
    (_doc(schema_version="ATIF-v2.0"), "schema_version"),
    (_doc(steps=[]), "at least 1"),
    (_doc(steps=[{**USER, "step_id": 2}]), "numbered from 1"),
    (_doc(steps=[{**USER, "reasoning_content": "r"}]), "belongs to agent steps"),
    (_doc(steps=[{**USER, "timestamp": "yesterday"}]), "timestamp"),
    (_doc(steps=[USER, _agent_step(observation={"results": [{"source_call_id": "c9"}]})]),
     "does not make"),
    (_doc(steps=[USER, _agent_step(llm_call_count=0, reasoning_content="r")]),
     "llm_call_count 0"),
    (_doc(steps=[{**USER, "message": [{"type": "text", "text": "a",
                                       "source": {"media_type": "image/png", "path": "p"}}]}]),
     "no 'source'"),
    (_doc(subagent_trajectories=[_doc()]), "own trajectory_id"),
])
def test_documents_breaking_the_format_are_refused(doc: dict, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Trajectory.model_validate(doc)


def test_a_valid_document_with_every_part_is_accepted() -> None:
    call = {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls"}}
    doc = Trajectory.model_validate(_doc(
        session_id="s", trajectory_id="t", notes="n", extra={"k": 1},
        steps=[USER, _agent_step(tool_calls=[call], reasoning_content="r",
                                 timestamp="2026-01-02T03:04:05Z",
                                 observation={"results": [{"source_call_id": "c1",
                                                           "content": "x"}]},
                                 metrics={"prompt_tokens": 3}, llm_call_count=1)],
        final_metrics={"total_steps": 2},
        subagent_trajectories=[_doc(trajectory_id="sub")]))
    assert doc.steps[1].tool_calls and doc.steps[1].tool_calls[0].arguments == {"command": "ls"}


def _rollout() -> RolloutRow:
    calls = [ToolCall(id="c1", function=FunctionCall(name="bash",
                                                     arguments='{"command":  "ls -a"}')),
             ToolCall(id="c2", function=FunctionCall(name="bash", arguments="{'command': ls"))]
    messages = [Message(role="system", content="s"), Message(role="user", content="u"),
                Message(role="assistant", content="", tool_calls=calls[:1]),
                Message(role="tool", tool_call_id="c1", name="bash", content="a b"),
                Message(role="assistant", content="", tool_calls=calls[1:]),
                Message(role="tool", tool_call_id="c2", name="bash", content="error: x")]
    turns = [RolloutTurn(reasoning_content="look", prompt_tokens=9, completion_tokens=2,
                         finish_reason="tool_calls", latency_s=0.5),
             RolloutTurn(finish_reason="tool_calls", latency_s=0.25)]
    from tasks.trajectories.render import supervise

    return RolloutRow(
        trajectory_id="r1", task_id="t1", run_id="solve-x",
        messages=supervise(messages, "masked"), tools="[]", action_space="terminal",
        reward=0.0, n_turns=2, model="m", attempt=0, k=1, ecosystem="files", kind="build",
        stop_reason="malformed_call", detail="bad", checks_passed=1, checks_total=3,
        prompt_tokens=9, completion_tokens=2, llm_s=0.75, total_s=3.0, unchecked_changes=[],
        created_at=datetime(2026, 1, 2, tzinfo=UTC), agent="taskfactory", turns=turns,
        verifier_lines=["PASS state files/a", "FAIL answer answer.txt"])


def test_a_rollout_document_gives_back_the_whole_attempt() -> None:
    row = _rollout()
    doc = rollout_document(row.model_dump())
    first, second = (s for s in doc.steps if s.source == "agent")
    assert first.tool_calls and first.tool_calls[0].extra == {
        "raw_arguments": '{"command":  "ls -a"}'}
    assert second.tool_calls and second.tool_calls[0].arguments == {}
    assert first.metrics and first.metrics.prompt_tokens == 9
    assert second.metrics and second.metrics.prompt_tokens is None
    assert first.reasoning_content == "look" and first.llm_call_count == 1
    assert doc.final_metrics and doc.final_metrics.total_prompt_tokens == 9
    assert (doc.extra or {})["verifier_lines"] == row.verifier_lines
    messages, turns = chat_messages(doc)
    from tasks.trajectories.render import supervise

    assert supervise(messages, "masked") == row.messages and turns == row.turns


@pytest.fixture
def data(sft_data: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(sft_data, copy)
    return copy


def _refused(capsys: pytest.CaptureFixture[str], argv: list, *words: str) -> None:
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("taskfactory: error: "), err
    for word in words:
        assert word in err, err


def test_export_refusals_write_nothing(sft_data: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    base = ["export", "atif", "--data", sft_data]
    _refused(capsys, [*base, "--out", out, "--rollouts", "--supervision", "full"],
             "--supervision full")
    _refused(capsys, [*base, "--out", tmp_path, "--layout", "jsonl"], "is a folder")
    _refused(capsys, [*base, "--out", out, "--where", "false"], "matching --where false")
    _refused(capsys, [*base, "--out", out, "--rollouts"], "no rollouts")
    _refused(capsys, [*base, "--out", tmp_path / "a.jsonl", "--layout", "jsonl", "--where",
                      "no_such_column"], "--where")
    _refused(capsys, [*base, "--out", tmp_path / "no" / "a.jsonl", "--layout", "jsonl"],
             "cannot write --out")
    assert not out.exists() and not (tmp_path / "a.jsonl").exists()
    foreign = out / "trajectories-function-full"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    _refused(capsys, [*base, "--out", out], "was not written by", str(foreign))
    assert sorted(p.name for p in out.iterdir()) == [foreign.name]  # no temp folder left
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_an_export_replaces_only_what_an_export_wrote(sft_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["export", "atif", "--data", str(sft_data), "--out", str(out),
            "--supervision", "masked"]
    assert main(argv) == 0
    first = sorted(p.relative_to(out) for p in out.rglob("trajectory.json"))
    documents = {p: (out / p).read_bytes() for p in first}
    assert main(argv) == 0  # again: the same folders, the same bytes
    assert sorted(p.relative_to(out) for p in out.rglob("trajectory.json")) == first
    assert all((out / p).read_bytes() == b for p, b in documents.items())
    assert sorted(p.name for p in out.iterdir()) == ["trajectories-function-masked",
                                                     "trajectories-terminal-masked"]


def _bad_sources(tmp_path: Path, good: str) -> list[tuple[Path, tuple[str, ...]]]:
    first = json.loads(good)
    image = {**first, "steps": [{**first["steps"][0], "message": [
        {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}}]},
        *first["steps"][1:]]}
    stranger = {**first, "extra": {**first["extra"], "task_id": "no-such-task"}}
    unpaid = {**first, "extra": {k: v for k, v in first["extra"].items() if k != "reward"}}
    cases = {"notjson.jsonl": ("not json {", ("notjson.jsonl:2", "not JSON")),
             "notatif.jsonl": (json.dumps({"steps": []}), ("not an ATIF document", "agent")),
             "image.jsonl": (json.dumps(image), ("image or audio",)),
             "stranger.jsonl": (json.dumps(stranger), ("no task of", "no-such-task")),
             }
    out = []
    for name, (text, words) in cases.items():  # after a good document: all or nothing
        (tmp_path / name).write_text(good + "\n" + text + "\n")
        out.append((tmp_path / name, words))
    (tmp_path / "unpaid.jsonl").write_text(json.dumps(unpaid) + "\n")  # none has a reward
    out.append((tmp_path / "unpaid.jsonl", ("unpaid.jsonl:1: no reward",)))
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "nothing").mkdir()
    return [*out, (tmp_path / "empty.jsonl", ("holds no ATIF document",)),
            (tmp_path / "nothing", ("holds no ATIF document",)),
            (tmp_path / "missing", ("neither a folder nor a file",))]


def test_import_refusals_write_nothing_and_a_good_import_is_idempotent(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs.jsonl"
    assert main(["export", "atif", "--data", str(data), "--out", str(docs), "--layout",
                 "jsonl", "--supervision", "masked", "--action-space", "terminal"]) == 0
    good = docs.read_text().splitlines()
    manifest = (data / "_manifest.json").read_bytes()
    for source, words in _bad_sources(tmp_path, good[0]):
        _refused(capsys, ["import", "atif", source, "--data", data], *words)
    assert (data / "_manifest.json").read_bytes() == manifest
    capsys.readouterr()
    assert main(["import", "atif", str(docs), "--data", str(data)]) == 0
    assert f"imported {len(good)} rollouts (taskfactory-reference {len(good)})" in \
        capsys.readouterr().out
    rows = list(Dataset.open(data).rows(
        "select reward, stop_reason, action_space, attempt, k from rollouts"))
    assert set(rows) == {(1.0, "imported", "terminal", 0, 1)} and len(rows) == len(good)
    assert main(["import", "atif", str(docs), "--data", str(data)]) == 0
    assert "imported 0 rollouts (none) as run" in capsys.readouterr().out
    first = json.loads(good[0])  # a trial without a reward is left out, and said
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(json.dumps({**first, "extra": {**first["extra"], **change}})
                               for change in ({"reward": 0.5}, {"reward": None})) + "\n")
    assert main(["import", "atif", str(mixed), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "imported 1 rollouts" in out and "left out 1 documents without a reward" in out
    assert f"{mixed}:2" in out
