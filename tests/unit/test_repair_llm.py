"""propose_repair against a real local OpenAI-compatible HTTP server (no mocks)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tasks.execute.repair_llm import RepairProposal, RepairRequest, propose_repair
from tests.support.openai_server import Behaviour, OpenAIServer, make_client

TOOL = {
    "type": "function",
    "function": {
        "name": "grep_file",
        "description": "Print lines of a file matching a pattern.",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["pattern", "path"],
        },
    },
}
REQUEST = RepairRequest(
    tool=TOOL,
    args={"pattern": "ERROR", "path": "logs/missing.log"},
    command="grep -n ERROR logs/missing.log",
    exit_code=2,
    stderr="grep: logs/missing.log: No such file or directory\n" + "x" * 5000,
    stdout="",
    category="binding",
    candidates={"path": ["logs/app.log", "logs/db.log"]},
    alternatives=["rg_file"],
)


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def test_good_rebind_passes_validation(srv: OpenAIServer) -> None:
    reply = {"action": "rebind", "param": "path", "value": "logs/app.log", "rationale": "exists"}
    srv.ok(reply)
    client = make_client(srv)
    proposal = propose_repair(client, REQUEST)
    assert proposal == RepairProposal(**reply)
    assert client.stats.rejected == 0
    system, repair_system, user = srv.requests[0]["messages"]
    assert "JSON schema" in system["content"] and '"rebind"' in system["content"]
    assert "rebind" in repair_system["content"] and "substitute" in repair_system["content"]
    sent = json.loads(user["content"])
    assert sent["args"] == REQUEST.args
    assert sent["candidates"] == REQUEST.candidates
    assert sent["alternatives"] == ["rg_file"]
    assert len(sent["stderr"]) <= 2000  # long output is sent as a tail only


@pytest.mark.parametrize(
    "reply",
    [
        {"action": "substitute", "tool": "rg_file"},
        {"action": "truncate", "rationale": "later steps cannot work"},
        {"action": "give_up"},
    ],
    ids=["substitute", "truncate", "give_up"],
)
def test_other_applicable_actions_pass(srv: OpenAIServer, reply: dict) -> None:
    srv.ok(reply)
    assert propose_repair(make_client(srv), REQUEST) == RepairProposal(**reply)


def test_rebind_without_candidates_accepts_any_nonempty_value(srv: OpenAIServer) -> None:
    srv.ok({"action": "rebind", "param": "pattern", "value": "WARN"})
    proposal = propose_repair(make_client(srv), REQUEST)
    assert proposal is not None and proposal.value == "WARN"


@pytest.mark.parametrize(
    "reply",
    [
        {"action": "rebind", "param": "file", "value": "logs/app.log"},  # no such param
        {"action": "rebind", "param": "path", "value": "/etc/passwd"},  # not a candidate
        {"action": "rebind", "param": "path", "value": ""},  # empty value
        {"action": "rebind", "param": "path"},  # no value at all
        {"action": "rebind", "param": "pattern", "value": "ERROR"},  # the failing value again
        {"action": "substitute", "tool": "sed_file"},  # not an alternative
        {"action": "substitute"},  # no tool
    ],
    ids=[
        "unknown-param",
        "not-a-candidate",
        "empty-value",
        "missing-value",
        "same-value",
        "unknown-tool",
        "missing-tool",
    ],
)
def test_inapplicable_proposals_are_rejected(srv: OpenAIServer, reply: dict) -> None:
    srv.ok(reply)
    client = make_client(srv)
    assert propose_repair(client, REQUEST) is None
    assert client.stats.rejected == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json {",
        json.dumps({"action": "rewrite"}),
        json.dumps({"action": "give_up", "extra": 1}),
    ],
    ids=["not-json", "bad-action", "extra-field"],
)
def test_malformed_replies_give_none(srv: OpenAIServer, content: str) -> None:
    srv.malformed(content)
    client = make_client(srv)
    assert propose_repair(client, REQUEST) is None
    assert client.stats.malformed == 1


def test_server_errors_give_none_without_raising(srv: OpenAIServer) -> None:
    srv.default = Behaviour(kind="status", code=500)
    client = make_client(srv, max_attempts=2, breaker_threshold=2, breaker_cooldown_s=30)
    assert propose_repair(client, REQUEST) is None  # retries exhausted
    assert propose_repair(client, REQUEST) is None
    assert srv.request_count == 4
    assert propose_repair(client, REQUEST) is None  # breaker open: no HTTP at all
    assert srv.request_count == 4
    srv.default = Behaviour(kind="status", code=400)
    assert propose_repair(make_client(srv), REQUEST) is None


def test_budget_exhausted_gives_none(srv: OpenAIServer) -> None:
    srv.ok({"action": "give_up"}, total_tokens=50)
    client = make_client(srv, token_budget=10)
    assert propose_repair(client, REQUEST) is not None
    other = REQUEST.model_copy(update={"exit_code": 1})
    assert propose_repair(client, other) is None
    assert srv.request_count == 1
