"""LLMClient.complete_chat (tool-calling turns) against a real local OpenAI-compatible
HTTP server: tool calls as sent, retries, usage, no cache, breaker and budget shared with
the JSON completions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.core.llm import LLMBudgetExceeded, LLMUnavailable
from tests.support.openai_server import OpenAIServer, make_client

TOOLS = [{"type": "function", "function": {
    "name": "bash", "description": "run", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]}}}]
CALL = {"tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def test_tool_calls_come_back_as_sent_with_usage(srv: OpenAIServer) -> None:
    srv.turn(lambda body: CALL)
    client = make_client(srv)
    reply = client.complete_chat([{"role": "user", "content": "list"}], TOOLS, "solve",
                                 {"max_tokens": 64})
    assert reply.tool_calls == [{"id": "call_1", "name": "bash",
                                 "arguments": '{"command": "ls"}'}]
    assert reply.content is None and reply.finish_reason == "tool_calls"
    assert reply.prompt_tokens > 0 and reply.latency_s > 0
    sent = srv.requests[0]
    assert sent["tools"] == TOOLS and sent["max_tokens"] == 64 and "response_format" not in sent
    assert client.stats.tokens_used == reply.prompt_tokens + reply.completion_tokens


def test_429_then_500_are_retried_and_nothing_is_cached(srv: OpenAIServer,
                                                        tmp_path: Path) -> None:
    srv.status(429).status(500).turn(lambda body: {"content": "done"})
    srv.turn(lambda body: {"content": "again"})
    client = make_client(srv, cache_dir=tmp_path)
    messages = [{"role": "user", "content": "x"}]
    assert client.complete_chat(messages, TOOLS, "solve").content == "done"
    assert client.complete_chat(messages, TOOLS, "solve").content == "again"
    assert srv.request_count == 4 and client.stats.retries == 2
    assert not list(tmp_path.rglob("*.json"))


def test_exhausted_retries_raise_unavailable_and_count_toward_the_breaker(
        srv: OpenAIServer) -> None:
    srv.status(500).status(500).status(500)
    client = make_client(srv, breaker_threshold=1)
    with pytest.raises(LLMUnavailable, match="gave up after retries"):
        client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    with pytest.raises(LLMUnavailable, match="circuit breaker open"):
        client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    assert srv.request_count == 3


def test_spent_budget_makes_no_request(srv: OpenAIServer) -> None:
    srv.turn(lambda body: {"content": "a"})
    client = make_client(srv, token_budget=1)
    client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    with pytest.raises(LLMBudgetExceeded):
        client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    assert srv.request_count == 1


def test_reasoning_comes_back_and_missing_usage_is_not_counted_as_measured(
        srv: OpenAIServer) -> None:
    srv.turn(lambda body: {"content": "done", "reasoning_content": "ls showed two files"},
             usage=False)
    srv.turn(lambda body: {"content": "done", "reasoning": "the other key"})
    client = make_client(srv)
    bare = client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    assert bare.reasoning_content == "ls showed two files"
    assert (bare.usage_reported, bare.prompt_tokens, bare.completion_tokens) == (False, 0, 0)
    other = client.complete_chat([{"role": "user", "content": "x"}], TOOLS, "solve")
    assert other.reasoning_content == "the other key" and other.usage_reported
