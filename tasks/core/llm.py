"""A small, generic, optional LLM client: JSON-only chat completions validated by pydantic.

Any OpenAI-compatible server works (``/v1/chat/completions``).  The client adds what a batch
factory needs around one call: retries with exponential backoff and jitter (tenacity; the
openai SDK's own retries are off), a circuit breaker, a lifetime token budget, and an
optional content-addressed disk cache.  One client may be shared by worker threads.

The default run uses no LLM: :meth:`LLMConfig.from_env` returns ``None`` unless both a base
URL and a model are configured.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import openai
from pydantic import BaseModel, Field, ValidationError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

# Transient trouble worth another attempt; every other API error fails at once.
RETRYABLE = (
    openai.RateLimitError,  # 429
    openai.InternalServerError,  # 5xx
    openai.APITimeoutError,
    openai.APIConnectionError,  # includes connection refused
)


class LLMConfig(BaseModel, extra="forbid"):
    base_url: str
    model: str
    api_key: str = "none"
    timeout_s: float = 30.0
    max_attempts: int = Field(4, ge=1)  # attempts per call, including the first
    backoff_base_s: float = 0.5  # exponential backoff with jitter
    backoff_max_s: float = 8.0
    token_budget: int = 200_000  # total_tokens over the client's life
    breaker_threshold: int = 5  # consecutive failed calls that open the breaker
    breaker_cooldown_s: float = 60.0
    cache_dir: Path | None = None  # None = no disk cache
    temperature: float = 0.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> LLMConfig | None:
        """Config from TASKFACTORY_LLM_* (falling back to OPENAI_*); ``None`` = LLM off.

        TASKFACTORY_LLM_BASE_URL (or OPENAI_BASE_URL) and TASKFACTORY_LLM_MODEL are required;
        TASKFACTORY_LLM_API_KEY (or OPENAI_API_KEY) and TASKFACTORY_LLM_CACHE_DIR (the disk
        cache; none by default) are optional.
        """
        base_url = env.get("TASKFACTORY_LLM_BASE_URL") or env.get("OPENAI_BASE_URL")
        model = env.get("TASKFACTORY_LLM_MODEL")
        if not base_url or not model:
            return None
        api_key = env.get("TASKFACTORY_LLM_API_KEY") or env.get("OPENAI_API_KEY") or "none"
        cache = env.get("TASKFACTORY_LLM_CACHE_DIR")
        return cls(base_url=base_url, model=model, api_key=api_key,
                   cache_dir=Path(cache) if cache else None)


class LLMError(Exception):
    """Any LLM trouble; callers that treat the LLM as optional catch this one."""


class LLMUnavailable(LLMError):
    """Breaker open, retries exhausted, or the server cannot be reached."""


class LLMBudgetExceeded(LLMError):
    """The client's token budget is used up; no request was made."""


class LLMMalformed(LLMError):
    """The reply is not a JSON object or fails the requested pydantic schema."""


class LLMStats(BaseModel):
    """Counters over the client's life (updated under the client's lock)."""

    requests: int = 0  # HTTP calls made, retries included
    cache_hits: int = 0
    retries: int = 0  # attempts after the first
    failures: int = 0  # calls that failed after reaching for the server (malformed included)
    malformed: int = 0  # replies rejected by JSON parsing or the schema
    rejected: int = 0  # schema-valid replies a caller rejected (see record_rejected)
    tokens_used: int = 0
    breaker_opened: int = 0  # times the circuit breaker opened


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _system_prompt(schema: type[BaseModel]) -> str:
    return (
        "Reply with one JSON object only: no prose, no markdown fences. "
        "It must validate against this JSON schema:\n" + _canonical(schema.model_json_schema())
    )


class LLMClient:
    """JSON-only completions with retries, breaker, budget and disk cache; thread-safe."""

    def __init__(self, config: LLMConfig, before_request: Callable[[], None] | None = None
                 ) -> None:
        """``before_request`` runs before every HTTP request, retries included (a rate
        limit waits there)."""
        self.config = config
        self._before_request = before_request
        self.stats = LLMStats()
        self._lock = threading.Lock()
        self._consecutive_failures = 0
        self._open_until = 0.0  # time.monotonic() until which the breaker is open
        self._openai = openai.OpenAI(  # max_retries=0: tenacity does the retrying
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s,
            max_retries=0,
        )

    def close(self) -> None:
        self._openai.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record_rejected(self, purpose: str) -> None:
        """Count a schema-valid reply that the caller's own checks rejected."""
        with self._lock:
            self.stats.rejected += 1
        log.info("llm %s: reply rejected by caller validation", purpose)

    def complete_json(self, messages: list[dict], schema: type[M], purpose: str) -> M:
        """Ask for one JSON object validating against ``schema``; return it validated.

        Order: disk cache (hit = no HTTP, no budget) -> breaker (open = LLMUnavailable) ->
        budget (spent = LLMBudgetExceeded) -> request with retries -> parse and validate
        (LLMMalformed) -> cache.  Failures of the request or of the reply count toward the
        breaker; a success closes it.  The cache key covers model, the messages as sent (with
        the schema prompt), the schema, temperature and purpose.  Under concurrency the budget
        is soft: calls already past the check may overshoot it by their own usage.
        """
        full = [{"role": "system", "content": _system_prompt(schema)}, *messages]
        cfg = self.config
        key_fields = (cfg.model, full, schema.model_json_schema(), cfg.temperature, purpose)
        key = hashlib.sha256(_canonical(key_fields).encode()).hexdigest()
        hit = self._cache_get(key, schema)
        if hit is not None:
            with self._lock:
                self.stats.cache_hits += 1
            return hit
        self._admit(purpose)
        try:
            content = self._content(self._request(full, purpose, {
                "response_format": {"type": "json_object"}}), purpose)
            result = self._parse(content, schema, purpose)
        except LLMError:
            self._record_failure()
            raise
        self._record_success()
        self._cache_put(key, content)
        return result

    def complete_chat(self, messages: list[dict], tools: list[dict], purpose: str,
                      params: Mapping[str, Any] | None = None) -> ChatReply:
        """One sampled chat turn with ``tools`` offered: the assistant message as the server
        sent it, never cached (a sample is not a lookup).

        Same order as :meth:`complete_json` minus the cache: breaker, budget, request with
        retries (``LLMUnavailable`` when they run out, ``LLMError`` for other API errors),
        then the reply (``LLMMalformed`` when it has no message).  ``params`` are extra
        sampling parameters (``max_tokens``, ``top_p``, ...); ``temperature`` comes from the
        config unless ``params`` names it."""
        self._admit(purpose)
        t0 = time.perf_counter()
        try:
            completion = self._request(messages, purpose, {"tools": tools, **(params or {})})
            reply = _chat_reply(completion, purpose)
        except LLMError as exc:
            if isinstance(exc, LLMMalformed):
                with self._lock:
                    self.stats.malformed += 1
            self._record_failure()
            raise
        self._record_success()
        return reply.model_copy(update={"latency_s": time.perf_counter() - t0})

    def _admit(self, purpose: str) -> None:
        """LLMUnavailable while the breaker is open, LLMBudgetExceeded once the budget is
        spent."""
        with self._lock:
            if time.monotonic() < self._open_until:
                raise LLMUnavailable(f"llm {purpose}: circuit breaker open")
            if self.stats.tokens_used >= self.config.token_budget:
                raise LLMBudgetExceeded(f"llm {purpose}: {self.stats.tokens_used} of "
                                        f"{self.config.token_budget} tokens used")

    def _record_success(self) -> None:
        with self._lock:
            self._consecutive_failures = 0
            self._open_until = 0.0

    # ---- one call with retries ------------------------------------------------------------
    def _request(self, messages: list[dict], purpose: str, extra: Mapping[str, Any]) -> Any:
        """The completion, after retries; its usage counted toward the budget."""
        cfg = self.config
        body = {"temperature": cfg.temperature, **extra}

        def attempt() -> Any:
            if self._before_request is not None:
                self._before_request()
            with self._lock:
                self.stats.requests += 1
            return self._openai.chat.completions.create(
                model=cfg.model, messages=messages, **body)  # type: ignore[call-overload,arg-type]

        def backoff(state: RetryCallState) -> float:
            # Same shape as tenacity's wait_exponential_jitter(initial=base, max=..., jitter=base)
            # (its default jitter of 1 s would swamp a small base; ``initial`` is deprecated).
            base = cfg.backoff_base_s
            exp = base * 2 ** (state.attempt_number - 1)
            return min(exp + random.uniform(0, base), cfg.backoff_max_s)

        def count_retry(state: RetryCallState) -> None:
            with self._lock:
                self.stats.retries += 1
            exc = state.outcome.exception() if state.outcome else None
            log.debug("llm %s: attempt %d failed: %r", purpose, state.attempt_number, exc)

        retrying = Retrying(
            retry=retry_if_exception_type(RETRYABLE), stop=stop_after_attempt(cfg.max_attempts),
            wait=backoff, before_sleep=count_retry, reraise=True,
        )
        try:
            completion = retrying(attempt)
        except RETRYABLE as e:
            raise LLMUnavailable(f"llm {purpose}: gave up after retries: {e}") from e
        except openai.OpenAIError as e:  # 4xx other than 429, unparseable replies, ...
            raise LLMError(f"llm {purpose}: {type(e).__name__}: {e}") from e

        usage = getattr(completion, "usage", None)
        tokens = getattr(usage, "total_tokens", None) if usage is not None else None
        if tokens is None:  # server omitted usage: estimate ~4 characters per token
            chars = sum(len(str(m.get("content", ""))) for m in messages) + len(
                str(_message(completion) or ""))
            tokens = max(1, chars // 4)
        with self._lock:
            self.stats.tokens_used += int(tokens)
        return completion

    def _content(self, completion: Any, purpose: str) -> str:
        message = _message(completion)
        content = getattr(message, "content", None)
        if content is None:
            with self._lock:
                self.stats.malformed += 1
            raise LLMMalformed(f"llm {purpose}: reply has no message content")
        return content

    def _parse(self, content: str, schema: type[M], purpose: str) -> M:
        try:
            data = json.loads(content)
            if not isinstance(data, dict):
                raise ValueError(f"expected a JSON object, got {type(data).__name__}")
            return schema.model_validate(data)
        except (ValueError, ValidationError) as e:  # JSONDecodeError is a ValueError
            with self._lock:
                self.stats.malformed += 1
            raise LLMMalformed(f"llm {purpose}: {str(e)[:300]}") from e

    def _record_failure(self) -> None:
        cfg = self.config
        with self._lock:
            self.stats.failures += 1
            self._consecutive_failures += 1
            if self._consecutive_failures >= cfg.breaker_threshold:
                now = time.monotonic()
                if now >= self._open_until:  # not already open: count the opening
                    self.stats.breaker_opened += 1
                    log.warning(
                        "llm circuit breaker open for %.1fs after %d consecutive failures",
                        cfg.breaker_cooldown_s,
                        self._consecutive_failures,
                    )
                self._open_until = now + cfg.breaker_cooldown_s

    # ---- disk cache ----------------------------------------------------------------------
    def _cache_path(self, key: str) -> Path | None:
        d = self.config.cache_dir
        return None if d is None else Path(d) / key[:2] / f"{key}.json"

    def _cache_get(self, key: str, schema: type[M]) -> M | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return schema.model_validate(data) if isinstance(data, dict) else None
        except (OSError, ValueError, ValidationError):
            log.warning("llm cache entry %s unreadable; ignoring it", path)
            return None

    def _cache_put(self, key: str, content: str) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(content)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:  # a cache that cannot be written is not an LLM failure
            log.warning("llm cache write to %s failed: %s", path, e)


class ChatReply(BaseModel):
    """One assistant turn of :meth:`LLMClient.complete_chat`.  ``tool_calls`` keep what the
    server sent (``id``, ``name``, ``arguments`` as a string, possibly not JSON: judging the
    call is the caller's job)."""

    content: str | None
    tool_calls: list[dict[str, str]]
    prompt_tokens: int
    completion_tokens: int
    usage_reported: bool = True
    """False when the server sent no ``usage``: the token counts are then 0, not measured."""
    finish_reason: str | None
    reasoning_content: str | None = None
    """The model's reasoning, when the server sends it beside the content
    (``reasoning_content``, as vLLM and DeepSeek do, or ``reasoning``)."""
    latency_s: float = 0.0
    """Seconds from the first request to the reply, retries and back-off included."""


def _message(completion: Any) -> Any:
    """The first choice's message, or None (no choices, or not a completion at all)."""
    try:
        return completion.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None


def _chat_reply(completion: Any, purpose: str) -> ChatReply:
    message = _message(completion)
    if message is None:
        raise LLMMalformed(f"llm {purpose}: reply has no message")
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        calls.append({"id": str(getattr(call, "id", "") or ""),
                      "name": str(getattr(function, "name", "") or ""),
                      "arguments": str(getattr(function, "arguments", "") or "")})
    usage = getattr(completion, "usage", None)
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return ChatReply(content=message.content, tool_calls=calls,
                     prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                     completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                     usage_reported=usage is not None,
                     finish_reason=completion.choices[0].finish_reason,
                     reasoning_content=reasoning if isinstance(reasoning, str) else None)
