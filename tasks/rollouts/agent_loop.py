"""The built-in agent loop: a chat model on an OpenAI-compatible endpoint acting through tools.

One attempt: the system prompt of the action space and the task's instruction, then turns
of (sample one assistant message with the tools offered; run each tool call it makes,
feeding back the observation) until the model answers without a tool call (``finished``),
or a limit or a fault stops it.  Beside the conversation, each assistant message keeps
what the endpoint said of it (:class:`schemas.records.RolloutTurn`: reasoning, usage where
reported).  The loop knows nothing about sandboxes: tools run through
an :class:`Actions` (see :mod:`tasks.rollouts.actions`), and scoring is the caller's.

Stop reasons (:data:`LoopStop`): ``finished`` (the model answered without a call; the
caller's verifier decides ``solved`` or ``gave_up``), ``turn_limit`` (``max_turns`` assistant
messages, all calling tools), ``timeout`` (the wall-clock limit passed, between turns or
during a command), ``malformed_call`` (a call of a tool not offered, or with arguments that
are not a JSON object of its parameters: the call is answered with the error and the
attempt stops), ``endpoint_error`` (the endpoint failed after the client's retries, the
breaker is open or the token budget is spent).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol

from schemas.records import ActionSpace, FunctionCall, Message, RolloutTurn, ToolCall
from tasks.core.llm import ChatReply, LLMClient, LLMError
from tasks.trajectories.render import SYSTEM_PROMPTS

LoopStop = Literal["finished", "turn_limit", "timeout", "malformed_call", "endpoint_error"]


class MalformedCall(ValueError):
    """A tool call the actions cannot run: unknown tool, or arguments that do not fit."""


class Actions(Protocol):
    """What the agent can do: the tools it is offered, and running one call."""

    tools: list[dict]

    def run(self, name: str, arguments: dict, timeout: float) -> tuple[str, bool]:
        """(observation text, timed out) of one call, the command limited to ``timeout``
        seconds; MalformedCall when ``name`` is not a tool or ``arguments`` do not fit it."""
        ...


@dataclass(frozen=True)
class Limits:
    max_turns: int = 30
    """Assistant messages per attempt."""
    command_timeout_s: float = 60.0
    wall_s: float = 600.0
    """The whole attempt, sampling and commands."""


@dataclass
class LoopResult:
    messages: list[Message]
    stop: LoopStop
    detail: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_s: float = 0.0
    turns: list[RolloutTurn] = field(default_factory=list)
    """One per assistant message: what the endpoint said of it besides the message."""

    def reply(self, reply: ChatReply, message: Message) -> None:
        """Take in one reply: its assistant ``message``, usage and reasoning."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.llm_s += reply.latency_s
        reported = reply.usage_reported
        self.messages.append(message)
        self.turns.append(RolloutTurn(
            reasoning_content=reply.reasoning_content,
            prompt_tokens=reply.prompt_tokens if reported else None,
            completion_tokens=reply.completion_tokens if reported else None,
            finish_reason=reply.finish_reason, latency_s=round(reply.latency_s, 4)))

    @property
    def n_turns(self) -> int:
        return sum(m.role == "assistant" for m in self.messages)


def wire(messages: list[Message]) -> list[dict]:
    """Messages as the chat-completions endpoint takes them (no loss flags, no reasoning)."""
    out = []
    for m in messages:
        d: dict = {"role": m.role, "content": m.content}
        if m.tool_calls:
            d["tool_calls"] = [c.model_dump() for c in m.tool_calls]
        if m.tool_call_id is not None:
            d["tool_call_id"], d["name"] = m.tool_call_id, m.name
        out.append(d)
    return out


def _arguments(text: str, name: str) -> dict:
    try:
        args = json.loads(text or "{}")
    except ValueError:
        raise MalformedCall(f"{name}: arguments are not JSON: {text[:200]!r}") from None
    if not isinstance(args, dict):
        raise MalformedCall(f"{name}: arguments are not a JSON object: {text[:200]!r}")
    return args


def run_loop(client: LLMClient, actions: Actions, instruction: str, action_space: ActionSpace,
             limits: Limits, params: dict | None = None) -> LoopResult:
    """One attempt of the model behind ``client`` at ``instruction`` (see the module doc).
    Never raises for the model's or the endpoint's faults: they are stop reasons."""
    deadline = time.monotonic() + limits.wall_s
    result = LoopResult([Message(role="system", content=SYSTEM_PROMPTS[action_space]),
                         Message(role="user", content=instruction)], "turn_limit")
    for turn in range(1, limits.max_turns + 1):
        if time.monotonic() >= deadline:
            result.stop, result.detail = "timeout", f"{limits.wall_s:g} s passed before turn {turn}"
            return result
        try:
            reply = client.complete_chat(wire(result.messages), actions.tools, "solve", params)
        except LLMError as exc:
            result.stop, result.detail = "endpoint_error", str(exc).splitlines()[0][:500]
            return result
        if not reply.tool_calls:
            result.reply(reply, Message(role="assistant", content=reply.content or ""))
            result.stop = "finished"
            return result
        calls = [ToolCall(id=c["id"] or f"call_{turn}_{i}", function=FunctionCall(
            name=c["name"], arguments=c["arguments"])) for i, c in enumerate(reply.tool_calls)]
        result.reply(reply, Message(role="assistant", content=reply.content or "",
                                    tool_calls=calls))
        for call in calls:
            name = call.function.name
            remaining = deadline - time.monotonic()
            try:
                args = _arguments(call.function.arguments, name)
                observed, timed_out = actions.run(name, args, min(limits.command_timeout_s,
                                                                  max(remaining, 0.1)))
            except MalformedCall as exc:
                result.messages.append(Message(role="tool", tool_call_id=call.id, name=name,
                                               content=f"error: {exc}"))
                result.stop, result.detail = "malformed_call", str(exc)[:500]
                return result
            result.messages.append(Message(role="tool", tool_call_id=call.id, name=name,
                                           content=observed))
            if timed_out and time.monotonic() >= deadline:
                result.stop = "timeout"
                result.detail = f"{limits.wall_s:g} s passed during a {name} call"
                return result
    result.detail = f"{limits.max_turns} turns, every one calling a tool"
    return result
