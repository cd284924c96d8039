"""An ATIF document back as chat messages: the inverse of
:func:`tasks.exports.atif.documents.conversation_steps`.

Each system or user step is a message of that role; each agent step an assistant message
(its content, reasoning and tool calls, arguments as JSON text: ``extra.raw_arguments``
when the document keeps it, else the object written with sorted keys), followed by one
``tool`` message per observation result tied to a call (``name``: the call's function).
A result tied to no call (feedback that answers no tool call, as some agents record the
terminal's screen) becomes a ``user`` message.  Loss flags come from each step's and
result's ``extra`` (``train``, ``weight``); where a document has none, assistant messages
are trained and nothing else is (``masked``).  Per agent step, the reasoning and the usage
its ``metrics`` report become a :class:`schemas.records.RolloutTurn`.

A document with image or audio parts is refused: chat rows hold text only.  Pure functions.
"""

from __future__ import annotations

import json
from typing import Any

from schemas.records import FunctionCall, Message, RolloutTurn, ToolCall
from tasks.exports.atif import AtifError
from tasks.exports.atif.models import Content, Step, Trajectory


def _text(content: Content | None, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if any(part.type != "text" for part in content):
        raise AtifError(f"{where} holds image or audio content, which chat rows cannot hold")
    return "".join(part.text or "" for part in content)


def _flags(extra: dict[str, Any] | None, trained: bool) -> dict[str, Any]:
    extra = extra or {}
    train = extra.get("train")
    train = trained if not isinstance(train, bool) else train
    weight = extra.get("weight")
    return {"train": train, "weight": weight if weight in (0, 1) else int(train)}


def _arguments(call: Any) -> str:
    raw = (call.extra or {}).get("raw_arguments")
    return raw if isinstance(raw, str) else json.dumps(call.arguments, sort_keys=True)


def _turn(step: Step) -> RolloutTurn:
    metrics = step.metrics
    extra = (metrics.extra or {}) if metrics else {}
    finish, latency = extra.get("finish_reason"), extra.get("latency_s")
    return RolloutTurn(
        reasoning_content=step.reasoning_content,
        prompt_tokens=metrics.prompt_tokens if metrics else None,
        completion_tokens=metrics.completion_tokens if metrics else None,
        finish_reason=finish if isinstance(finish, str) else None,
        latency_s=float(latency) if isinstance(latency, int | float) else None)


def _agent_messages(step: Step) -> list[Message]:
    where = f"step {step.step_id}"
    calls = [ToolCall(id=c.tool_call_id, function=FunctionCall(
        name=c.function_name, arguments=_arguments(c))) for c in step.tool_calls or []]
    out = [Message(role="assistant", content=_text(step.message, where),
                   reasoning_content=step.reasoning_content, tool_calls=calls or None,
                   **_flags(step.extra, True))]
    names = {c.id: c.function.name for c in calls}
    for result in step.observation.results if step.observation else []:
        text = _text(result.content, f"{where}'s observation")
        if result.source_call_id is None:
            out.append(Message(role="user", content=text, **_flags(result.extra, False)))
        else:
            out.append(Message(role="tool", tool_call_id=result.source_call_id,
                               name=names[result.source_call_id], content=text,
                               **_flags(result.extra, False)))
    return out


def chat_messages(doc: Trajectory) -> tuple[list[Message], list[RolloutTurn]]:
    """The document's conversation and, per assistant message, its turn (see the module
    doc); AtifError for image or audio content."""
    messages: list[Message] = []
    turns: list[RolloutTurn] = []
    for step in doc.steps:
        if step.source == "agent":
            messages += _agent_messages(step)
            turns.append(_turn(step))
        else:
            messages.append(Message(role=step.source,
                                    content=_text(step.message, f"step {step.step_id}"),
                                    **_flags(step.extra, False)))
    return messages, turns
