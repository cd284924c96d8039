"""A real, scriptable OpenAI-compatible HTTP server for tests (stdlib only).

It serves ``POST /v1/chat/completions`` on 127.0.0.1 at a free port, in a background
thread.  Tests enqueue behaviours, consumed one per request, in order::

    with OpenAIServer() as srv:
        srv.status(429).status(500).ok({"answer": 42}, total_tokens=17)
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="m"))

When the queue is empty the ``default`` behaviour answers (an ``ok("{}")`` unless given).
``reply(fn)`` answers with ``fn(request_body)`` (a dict is JSON-encoded), for replies that
depend on the prompt, such as a paraphrase of the instruction it carries; ``turn(fn)``
answers with the whole assistant message ``fn(request_body)`` returns (``content`` and/or
``tool_calls``), for an agent that calls tools.
Every request body (parsed JSON) is recorded in :attr:`OpenAIServer.requests`, so a test can
count HTTP calls and inspect prompts.  A ``sleep`` behaviour waits on a stop event, so a
sleeping request never holds up :meth:`OpenAIServer.stop`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tasks.core.llm import LLMClient, LLMConfig

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


@dataclass(frozen=True)
class Behaviour:
    """One scripted answer.  ``kind`` is "ok" or "status"; ``delay_s`` waits first."""

    kind: str = "ok"
    content: str = "{}"
    total_tokens: int | None = None  # None -> derived from the text lengths
    usage: bool = True  # False -> omit the ``usage`` block entirely
    code: int = 200
    delay_s: float = 0.0
    compute: Callable[[dict[str, Any]], Any] | None = None  # content from the request body
    message: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # the whole message


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


class OpenAIServer:
    """Scriptable OpenAI chat-completions server; a context manager."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self.default = default or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- scripting ----------------------------------------------------------------------
    def enqueue(self, behaviour: Behaviour) -> OpenAIServer:
        with self._lock:
            self._queue.append(behaviour)
        return self

    def ok(
        self, content: Any = "{}", total_tokens: int | None = None, usage: bool = True
    ) -> OpenAIServer:
        """Answer 200 with ``content`` (a dict/list is JSON-encoded, a str sent verbatim)."""
        return self.enqueue(
            Behaviour(content=_content_text(content), total_tokens=total_tokens, usage=usage)
        )

    def reply(self, fn: Callable[[dict[str, Any]], Any]) -> OpenAIServer:
        """Answer 200 with ``fn(request_body)`` (a dict/list is JSON-encoded)."""
        return self.enqueue(Behaviour(compute=fn))

    def turn(self, fn: Callable[[dict[str, Any]], dict[str, Any]],
             usage: bool = True) -> OpenAIServer:
        """Answer 200 with the assistant message ``fn(request_body)`` (``content``,
        ``tool_calls``, ``reasoning_content``...); as a ``default``, every request without a
        queued behaviour.  ``usage`` False: the reply has no ``usage`` block."""
        return self.enqueue(Behaviour(message=fn, usage=usage))

    def malformed(self, content: str = "not json {") -> OpenAIServer:
        """A well-formed 200 envelope whose message content is not valid JSON."""
        return self.enqueue(Behaviour(content=content))

    def status(self, code: int, message: str | None = None) -> OpenAIServer:
        """Answer ``code`` with an OpenAI-style ``{"error": {...}}`` body."""
        return self.enqueue(Behaviour(kind="status", code=code, content=message or f"HTTP {code}"))

    def sleep(self, seconds: float, then: Behaviour | None = None) -> OpenAIServer:
        """Wait ``seconds`` (to trip client timeouts), then answer like ``then``/default."""
        base = then or self.default
        return self.enqueue(
            Behaviour(base.kind, base.content, base.total_tokens, base.usage, base.code, seconds)
        )

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            return self._queue.popleft() if self._queue else self.default

    # ---- lifecycle ----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> OpenAIServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout) -- nothing left to tell it
            self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error(404, f"no route {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, _error(400, "request body is not JSON"))
            return
        b = self.owner._next(body)
        if b.delay_s and self.owner._stopping.wait(b.delay_s):
            self.close_connection = True
            return
        if b.kind == "status":
            self._send(b.code, _error(b.code, b.content))
            return
        message: dict[str, Any] = {"role": "assistant", "content": b.content}
        if b.compute is not None:
            b = Behaviour(content=_content_text(b.compute(body)), total_tokens=b.total_tokens,
                          usage=b.usage)
            message["content"] = b.content
        if b.message is not None:
            message = {"role": "assistant", "content": None, **b.message(body)}
            b = Behaviour(content=json.dumps(message), total_tokens=b.total_tokens,
                          usage=b.usage)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        payload: dict[str, Any] = {
            "id": f"chatcmpl-test{len(self.owner.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    "logprobs": None,
                }
            ],
        }
        if b.usage:
            prompt_tokens = max(1, prompt_chars // 4)
            completion_tokens = max(1, len(b.content) // 4)
            total = b.total_tokens
            if total is None:
                total = prompt_tokens + completion_tokens
            payload["usage"] = {
                "prompt_tokens": min(prompt_tokens, total),
                "completion_tokens": max(0, total - min(prompt_tokens, total)),
                "total_tokens": total,
            }
        self._send(200, payload)


def _error(code: int, message: str) -> dict[str, Any]:
    etype = _ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": etype, "param": None, "code": None}}


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started :class:`OpenAIServer`, stopped after the test (import into a test module)."""
    with OpenAIServer() as srv:
        yield srv


def make_client(server: OpenAIServer | str, **overrides: Any) -> LLMClient:
    """A client of ``server`` (or a base URL) with short timeouts and back-off, so tests
    of retries take milliseconds; ``overrides`` are ``LLMConfig`` fields."""
    settings: dict[str, Any] = dict(
        base_url=server if isinstance(server, str) else server.base_url, model="test-model",
        timeout_s=2.0, max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.05)
    return LLMClient(LLMConfig(**{**settings, **overrides}))
