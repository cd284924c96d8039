"""Scripted agents for :class:`tests.support.openai_server.OpenAIServer`'s ``turn``: each is
a function of the request body that returns the next assistant message, chosen by how many
assistant messages the conversation already holds (so one script plays one attempt).

- :func:`replay`: the tool calls of a reference trajectory, in order, then a final answer;
- :func:`give_up`: answers at once without acting;
- :func:`malformed`: calls a tool with arguments that are not JSON;
- :func:`explore_then`: looks around with ``probe_calls`` first, then replays.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Turn = Callable[[dict[str, Any]], dict[str, Any]]


def reference_calls(messages: list[dict]) -> list[tuple[str, str]]:
    """(tool name, JSON arguments) of every tool call of a trajectory's messages."""
    return [(c["function"]["name"], c["function"]["arguments"])
            for m in messages if m["role"] == "assistant" for c in (m["tool_calls"] or [])]


def _turns(body: dict[str, Any]) -> int:
    return sum(m["role"] == "assistant" for m in body["messages"])


def _call(n: int, name: str, arguments: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"call_{n}", "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}


def replay(calls: list[tuple[str, str]]) -> Turn:
    def turn(body: dict[str, Any]) -> dict[str, Any]:
        n = _turns(body)
        if n < len(calls):
            return _call(n, *calls[n])
        return {"content": "Done."}
    return turn


def give_up(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": "I cannot do this task."}


def malformed(body: dict[str, Any]) -> dict[str, Any]:
    return _call(_turns(body), "bash", "{'command': ls")


def explore_then(probe_calls: list[tuple[str, str]], calls: list[tuple[str, str]]) -> Turn:
    return replay(probe_calls + calls)


def bash(command: str) -> tuple[str, str]:
    return "bash", json.dumps({"command": command})
