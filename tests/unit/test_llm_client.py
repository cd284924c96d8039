"""LLMClient against a real local OpenAI-compatible HTTP server (no mocks)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from tasks.core.llm import (
    LLMBudgetExceeded,
    LLMConfig,
    LLMError,
    LLMMalformed,
    LLMUnavailable,
)
from tests.support.openai_server import Behaviour, OpenAIServer, make_client


class Answer(BaseModel):
    answer: int
    note: str = ""


ASK = [{"role": "user", "content": "What is six times seven?"}]


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def test_good_response_is_validated_and_usage_counted(srv: OpenAIServer) -> None:
    srv.ok({"answer": 42, "note": "easy"}, total_tokens=17)
    client = make_client(srv)
    result = client.complete_json(ASK, Answer, purpose="test")
    assert result == Answer(answer=42, note="easy")
    assert client.stats.requests == 1
    assert client.stats.tokens_used == 17
    assert (client.stats.retries, client.stats.failures, client.stats.malformed) == (0, 0, 0)
    body = srv.requests[0]
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "one JSON object only" in system["content"]
    assert (
        json.dumps(Answer.model_json_schema(), sort_keys=True, separators=(",", ":"))
        in system["content"]
    )
    assert user == ASK[0]


def test_missing_usage_is_estimated(srv: OpenAIServer) -> None:
    srv.ok({"answer": 1}, usage=False)
    client = make_client(srv)
    assert client.complete_json(ASK, Answer, purpose="test").answer == 1
    assert client.stats.tokens_used > 0


def test_429_then_500_then_ok_retries_twice(srv: OpenAIServer) -> None:
    srv.status(429).status(500).ok({"answer": 3}, total_tokens=5)
    client = make_client(srv)
    assert client.complete_json(ASK, Answer, purpose="test").answer == 3
    assert client.stats.retries == 2
    assert client.stats.requests == 3
    assert srv.request_count == 3
    assert client.stats.failures == 0


def test_timeout_then_ok_is_retried(srv: OpenAIServer) -> None:
    srv.sleep(3.0).ok({"answer": 9})
    client = make_client(srv, timeout_s=0.3)
    started = time.monotonic()
    assert client.complete_json(ASK, Answer, purpose="test").answer == 9
    assert time.monotonic() - started < 2.5
    assert client.stats.retries == 1
    assert srv.request_count == 2


def test_retries_exhausted_raise_unavailable(srv: OpenAIServer) -> None:
    srv.status(503).status(503).status(503).ok({"answer": 1})
    client = make_client(srv, max_attempts=3)
    with pytest.raises(LLMUnavailable):
        client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 3
    assert client.stats.retries == 2
    assert client.stats.failures == 1


def test_400_fails_at_once_without_retry(srv: OpenAIServer) -> None:
    srv.status(400, "bad request").ok({"answer": 1})
    client = make_client(srv)
    with pytest.raises(LLMError) as info:
        client.complete_json(ASK, Answer, purpose="test")
    assert not isinstance(info.value, LLMUnavailable)
    assert srv.request_count == 1
    assert client.stats.retries == 0
    assert client.stats.failures == 1


def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as s:  # a port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1", max_attempts=2)
    with pytest.raises(LLMUnavailable):
        client.complete_json(ASK, Answer, purpose="test")
    assert client.stats.requests == 2
    assert client.stats.retries == 1


@pytest.mark.parametrize(
    "content",
    ["not json {", json.dumps({"answer": "many"}), json.dumps([1, 2]), json.dumps({"x": 1})],
    ids=["not-json", "wrong-type", "not-object", "missing-field"],
)
def test_malformed_raises_and_is_not_cached(
    srv: OpenAIServer, tmp_path: Path, content: str
) -> None:
    srv.malformed(content).malformed(content)
    client = make_client(srv, cache_dir=tmp_path)
    for _ in range(2):
        with pytest.raises(LLMMalformed):
            client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 2  # the repeat went to the server again
    assert client.stats.malformed == 2
    assert client.stats.failures == 2
    assert client.stats.retries == 0  # malformed replies are not retried
    assert not list(tmp_path.rglob("*.json"))


def test_cache_hits_skip_http_and_budget_and_persist(srv: OpenAIServer, tmp_path: Path) -> None:
    srv.ok({"answer": 5}, total_tokens=10)
    client = make_client(srv, cache_dir=tmp_path)
    first = client.complete_json(ASK, Answer, purpose="test")
    second = client.complete_json(ASK, Answer, purpose="test")
    assert first == second == Answer(answer=5)
    assert srv.request_count == 1
    assert client.stats.cache_hits == 1
    assert client.stats.tokens_used == 10
    [entry] = list(tmp_path.rglob("*.json"))
    assert entry.parent.name == entry.stem[:2] and len(entry.stem) == 64
    assert json.loads(entry.read_text()) == {"answer": 5}

    fresh = make_client(srv, cache_dir=tmp_path)  # a new client: the disk cache persists
    assert fresh.complete_json(ASK, Answer, purpose="test") == Answer(answer=5)
    assert fresh.stats.cache_hits == 1
    assert fresh.stats.requests == 0
    assert srv.request_count == 1

    srv.ok({"answer": 6})  # a different purpose is a different key
    assert fresh.complete_json(ASK, Answer, purpose="other").answer == 6
    assert srv.request_count == 2


def test_circuit_breaker_opens_and_recovers(srv: OpenAIServer) -> None:
    srv.default = Behaviour(kind="status", code=500)
    client = make_client(srv, max_attempts=1, breaker_threshold=2, breaker_cooldown_s=0.3)
    for _ in range(2):
        with pytest.raises(LLMUnavailable):
            client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 2
    assert client.stats.breaker_opened == 1
    with pytest.raises(LLMUnavailable, match="breaker"):
        client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 2  # zero new HTTP requests while open

    time.sleep(0.35)
    srv.ok({"answer": 7})
    assert client.complete_json(ASK, Answer, purpose="test").answer == 7
    assert srv.request_count == 3
    # the success closed the breaker and reset the count: one failure does not reopen it
    with pytest.raises(LLMUnavailable):
        client.complete_json(ASK, Answer, purpose="test")
    srv.ok({"answer": 8})
    assert client.complete_json(ASK, Answer, purpose="test").answer == 8
    assert client.stats.breaker_opened == 1


def test_malformed_replies_count_toward_the_breaker(srv: OpenAIServer) -> None:
    srv.malformed().malformed()
    client = make_client(srv, breaker_threshold=2, breaker_cooldown_s=30)
    for _ in range(2):
        with pytest.raises(LLMMalformed):
            client.complete_json(ASK, Answer, purpose="test")
    with pytest.raises(LLMUnavailable):
        client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 2


def test_budget_exceeded_makes_no_request(srv: OpenAIServer) -> None:
    srv.ok({"answer": 1}, total_tokens=20).ok({"answer": 2}, total_tokens=20)
    client = make_client(srv, token_budget=25)
    assert client.complete_json(ASK, Answer, purpose="test").answer == 1
    assert client.complete_json(ASK, Answer, purpose="test").answer == 2  # 20 < 25: allowed
    assert client.stats.tokens_used == 40
    with pytest.raises(LLMBudgetExceeded):
        client.complete_json(ASK, Answer, purpose="test")
    assert srv.request_count == 2


def test_shared_client_across_threads(srv: OpenAIServer) -> None:
    srv.default = Behaviour(content=json.dumps({"answer": 1}), total_tokens=3)
    client = make_client(srv)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            ask = [{"role": "user", "content": f"question {i}"}]
            assert client.complete_json(ask, Answer, purpose="test").answer == 1
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert client.stats.requests == srv.request_count == 8
    assert client.stats.tokens_used == 24


def test_from_env() -> None:
    assert LLMConfig.from_env({}) is None
    assert LLMConfig.from_env({"TASKFACTORY_LLM_BASE_URL": "http://h/v1"}) is None
    assert LLMConfig.from_env({"TASKFACTORY_LLM_MODEL": "m"}) is None
    cfg = LLMConfig.from_env(
        {
            "TASKFACTORY_LLM_BASE_URL": "http://h/v1",
            "TASKFACTORY_LLM_MODEL": "m",
            "TASKFACTORY_LLM_API_KEY": "k",
        }
    )
    assert cfg is not None
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("http://h/v1", "m", "k")
    fallback = LLMConfig.from_env(
        {"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "ok", "TASKFACTORY_LLM_MODEL": "m"}
    )
    assert fallback is not None
    assert (fallback.base_url, fallback.api_key) == ("http://o/v1", "ok")
    bare = LLMConfig.from_env(
        {"TASKFACTORY_LLM_BASE_URL": "http://h/v1", "TASKFACTORY_LLM_MODEL": "m"}
    )
    assert bare is not None and bare.api_key == "none" and bare.cache_dir is None
    cached = LLMConfig.from_env({"TASKFACTORY_LLM_BASE_URL": "http://h/v1",
                                 "TASKFACTORY_LLM_MODEL": "m", "TASKFACTORY_LLM_CACHE_DIR": "c"})
    assert cached is not None and cached.cache_dir == Path("c")
