"""One exported record per ``trajectories`` row, in each target's own shape.

- ``hf`` (TRL, axolotl, transformers chat templates): ``{"messages", "tools", task_id,
  trajectory_id, supervision, action_space, reward, n_turns}``; ``tools`` a list of
  JSON-schema functions, tool-call ``arguments`` JSON objects (``--arguments string``:
  strings); every message keeps ``train`` (axolotl's ``message_field_training``),
  assistant messages ``weight``; reasoning under ``reasoning_content``, ``thinking`` or
  inline (``<think>…</think>`` before the content), as the chat template reads it.
- ``openai`` (OpenAI fine-tuning): the documented keys only — ``messages`` (``role``,
  ``content``, assistant ``tool_calls`` with string ``arguments`` and ``weight``, tool
  ``tool_call_id``) and ``tools``; reasoning, when the row has it, is inline in the
  content; the row's metadata goes to the sidecar (:func:`meta`).
- ``sharegpt`` (LLaMA-Factory): ``conversations`` of ``{"from", "value"}`` (``human``,
  ``function_call`` = JSON ``{"name", "arguments"}``, ``observation``, ``gpt``), ``system``,
  ``tools`` (a JSON string); reasoning wrapped in the thought words of the template family.

Keys with no value (reasoning of ``masked`` rows, ``tool_calls`` of plain messages) are left
out.  Pure functions: no I/O.
"""

from __future__ import annotations

import json

from tasks.exports.sft.families import INLINE_THOUGHT

COLUMNS = ("trajectory_id", "task_id", "supervision", "action_space", "reward", "n_turns",
           "messages", "tools")
META = ("task_id", "trajectory_id", "supervision", "action_space", "reward", "n_turns")
_ROLES = {"user": "human", "tool": "observation"}


def meta(row: tuple) -> dict:
    """The row's metadata (what is not training data), keyed as in ``META``."""
    record = dict(zip(COLUMNS, row, strict=True))
    return {k: record[k] for k in META}


def _wrap(reasoning: str | None, content: str, thought: tuple[str, str]) -> str:
    return f"{thought[0]}{reasoning}{thought[1]}{content}" if reasoning else content


def _calls(m: dict, arguments: str) -> list[dict]:
    return [{"id": c["id"], "type": c["type"],
             "function": {"name": c["function"]["name"],
                          "arguments": (json.loads(c["function"]["arguments"])
                                        if arguments == "object"
                                        else c["function"]["arguments"])}}
            for c in m["tool_calls"]]


def hf_message(m: dict, arguments: str = "object", key: str = "reasoning_content") -> dict:
    """One message in the hf shape, its reasoning under ``key`` (or inline)."""
    reasoning = m.get("reasoning_content")
    content = m["content"]
    if key == "inline":
        content = _wrap(reasoning, content, INLINE_THOUGHT)
    out: dict = {"role": m["role"], "content": content}
    if reasoning is not None and key != "inline":
        out[key] = reasoning
    if m.get("tool_calls"):
        out["tool_calls"] = _calls(m, arguments)
    for k in ("tool_call_id", "name"):
        if m.get(k) is not None:
            out[k] = m[k]
    out["train"] = bool(m["train"])
    if m["role"] == "assistant":
        out["weight"] = int(m["weight"])
    return out


def openai_message(m: dict) -> dict:
    """One message with OpenAI's documented keys only (reasoning inline)."""
    content = _wrap(m.get("reasoning_content"), m["content"], INLINE_THOUGHT)
    out: dict = {"role": m["role"]}
    if content or not m.get("tool_calls"):
        out["content"] = content
    if m["role"] == "assistant":
        if m.get("tool_calls"):
            out["tool_calls"] = _calls(m, "string")
        out["weight"] = int(m["weight"])
    if m["role"] == "tool":
        out["tool_call_id"] = m["tool_call_id"]
    return out


def sharegpt_turns(messages: list[dict], thought: tuple[str, str] | None) -> list[dict]:
    """LLaMA-Factory turns; ``thought`` None leaves reasoning out of ``function_call`` turns
    (the template parses them as bare JSON) and keeps it on the final answer."""
    turns = []
    for m in messages:
        reasoning = m.get("reasoning_content")
        if m["role"] == "system":
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                call = json.dumps({"name": c["function"]["name"],
                                   "arguments": json.loads(c["function"]["arguments"])},
                                  ensure_ascii=False)
                turns.append({"from": "function_call",
                              "value": _wrap(reasoning, call, thought) if thought else call})
        elif m["role"] == "assistant":
            turns.append({"from": "gpt",
                          "value": _wrap(reasoning, m["content"], thought or INLINE_THOUGHT)})
        else:
            turns.append({"from": _ROLES[m["role"]], "value": m["content"]})
    return turns


def sft_row(row: tuple, fmt: str, arguments: str = "object", key: str = "reasoning_content",
            thought: tuple[str, str] | None = INLINE_THOUGHT) -> dict:
    """One exported record from one ``trajectories`` row (columns as in ``COLUMNS``)."""
    record = dict(zip(COLUMNS, row, strict=True))
    messages, tools = record["messages"], record["tools"]
    if fmt == "openai":
        return {"messages": [openai_message(m) for m in messages], "tools": json.loads(tools)}
    if fmt == "hf":
        return {"messages": [hf_message(m, arguments, key) for m in messages],
                "tools": json.loads(tools), **meta(row)}
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return {"conversations": sharegpt_turns(messages, thought), "system": system,
            "tools": tools, **meta(row)}
