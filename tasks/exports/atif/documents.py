"""``trajectories`` and ``rollouts`` rows as ATIF documents.

A conversation becomes steps in order: each system or user message one step of that
source; each assistant message one ``agent`` step with its content, reasoning (where the
row keeps it: ``full``/``actobs`` trajectories, and the reasoning a rollout's endpoint
sent), tool calls (``tool_call_id`` = the call's id, arguments as a JSON object) and, as
its observation, the tool messages that answer it, each result tied to its call by
``source_call_id``.  Every step and observation result carries its message's loss flags in
``extra`` (``{"train": bool, "weight": 0|1}``), so the document keeps the supervision mode
exactly.  A call whose arguments are not a JSON object (a rollout's malformed call) has
``arguments`` ``{}`` and the text under ``extra.raw_arguments``; arguments that parse but
would not be written back byte for byte keep their text there too.

The root ``extra`` holds the row's metadata (:data:`TRAJECTORY_KEYS` or
:data:`ROLLOUT_KEYS`, plus ``source``, ``task_id``, ``trajectory_id``, ``ecosystem`` and
``created_at``); a rollout's agent steps carry the
endpoint's usage as ``metrics`` where it reported any (with the finish reason and latency
in ``metrics.extra``), and ``final_metrics`` sums it.
Pure functions: rows in (dicts keyed by column), :class:`Trajectory` out.
"""

from __future__ import annotations

import json
from typing import Any

from schemas.records import SOLVE_AGENT
from tasks.exports.atif.models import Trajectory

REFERENCE_AGENT = "taskfactory-reference"
"""``agent.name`` of a trajectory: the task's reference solution, rendered as a conversation."""
COMMON = ("trajectory_id", "task_id", "run_id", "supervision", "action_space", "reward",
          "n_turns", "messages", "tools", "created_at", "provenance", "ecosystem")
TRAJECTORY_KEYS = ("supervision", "action_space", "reward", "n_turns", "rendering")
ROLLOUT_KEYS = ("supervision", "action_space", "reward", "n_turns", "model", "attempt", "k",
                "kind", "stop_reason", "detail", "checks_passed", "checks_total",
                "verifier_lines", "unchecked_changes", "llm_s", "total_s", "agent")
TRAJECTORY_COLUMNS = (*COMMON, "rendering")
ROLLOUT_COLUMNS = (*COMMON, *(k for k in ROLLOUT_KEYS if k not in COMMON), "prompt_tokens",
                   "completion_tokens", "turns")


def _flags(m: dict) -> dict[str, Any]:
    return {"train": bool(m["train"]), "weight": int(m["weight"])}


def _call(call: dict) -> dict[str, Any]:
    text = call["function"]["arguments"]
    out: dict[str, Any] = {"tool_call_id": call["id"], "function_name": call["function"]["name"]}
    try:
        arguments = json.loads(text or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return {**out, "arguments": {}, "extra": {"raw_arguments": text}}
    if json.dumps(arguments, sort_keys=True) != text:
        out["extra"] = {"raw_arguments": text}
    return {**out, "arguments": arguments}


def _metrics(turn: dict | None) -> dict[str, Any] | None:
    """The turn's usage where the endpoint reported it; its finish reason and latency in
    ``extra``; None when there is nothing to say."""
    if not turn:
        return None
    extra = {k: turn[k] for k in ("finish_reason", "latency_s") if turn.get(k) is not None}
    tokens = {k: turn[k] for k in ("prompt_tokens", "completion_tokens")
              if turn.get(k) is not None}
    return {**tokens, "extra": extra} if extra else tokens or None


def conversation_steps(messages: list[dict], turns: list[dict] | None = None
                       ) -> list[dict[str, Any]]:
    """The steps of a conversation as data (see the module doc); ``turns`` (a rollout's
    :class:`schemas.records.RolloutTurn` per assistant message) add reasoning and metrics
    and mark each agent step as one LLM call.  ValueError for a tool message that follows
    no assistant message."""
    steps: list[dict[str, Any]] = []
    agent_turns = iter(turns or [])
    for m in messages:
        if m["role"] == "tool":
            if not steps or steps[-1]["source"] != "agent":
                raise ValueError(f"a tool message ({m.get('tool_call_id')}) follows no "
                                 "assistant message")
            steps[-1].setdefault("observation", {"results": []})["results"].append(
                {"source_call_id": m["tool_call_id"], "content": m["content"],
                 "extra": _flags(m)})
            continue
        step: dict[str, Any] = {"step_id": len(steps) + 1, "source": m["role"],
                                "message": m["content"], "extra": _flags(m)}
        if m["role"] == "assistant":
            step["source"] = "agent"
            turn = next(agent_turns, None) if turns is not None else None
            step["reasoning_content"] = (m.get("reasoning_content")
                                         or (turn or {}).get("reasoning_content"))
            if m.get("tool_calls"):
                step["tool_calls"] = [_call(c) for c in m["tool_calls"]]
            step["metrics"] = _metrics(turn)
            step["llm_call_count"] = 1 if turns is not None else None
        steps.append(step)
    return steps


def _final(steps: list[dict], turns: list[dict] | None, row: dict) -> dict[str, Any]:
    """Token totals: the reported usage of the turns, or (rows before per-turn usage) the
    row's totals when they are not 0; None when nothing was reported."""
    def total(key: str) -> int | None:
        if turns is not None:
            reported = [t[key] for t in turns if t.get(key) is not None]
            return sum(reported) if reported else None
        return row.get(key) or None

    return {"total_prompt_tokens": total("prompt_tokens"),
            "total_completion_tokens": total("completion_tokens"), "total_steps": len(steps)}


def _version(row: dict) -> str:
    provenance = row.get("provenance") or {}
    return str(provenance.get("generator_version") or "unknown")


def _document(row: dict, agent: dict[str, Any], turns: list[dict] | None,
              keys: tuple[str, ...], source: str) -> Trajectory:
    steps = conversation_steps(row["messages"], turns)
    return Trajectory.model_validate({
        "session_id": row["run_id"], "trajectory_id": row["trajectory_id"],
        "agent": {**agent, "version": _version(row),
                  "tool_definitions": json.loads(row["tools"])},
        "steps": steps, "final_metrics": _final(steps, turns, row),
        "extra": {"source": source, "task_id": row["task_id"],
                  "trajectory_id": row["trajectory_id"], "ecosystem": row["ecosystem"],
                  "created_at": row["created_at"].isoformat(),
                  **{k: row.get(k) for k in keys}}})


def trajectory_document(row: dict) -> Trajectory:
    """One ``trajectories`` row (columns :data:`TRAJECTORY_COLUMNS`) as a document;
    ValidationError when the row's conversation cannot be one."""
    return _document(row, {"name": REFERENCE_AGENT}, None, TRAJECTORY_KEYS, "trajectories")


def rollout_document(row: dict) -> Trajectory:
    """One ``rollouts`` row (columns :data:`ROLLOUT_COLUMNS`) as a document: the agent is
    the row's (``taskfactory`` for ``solve``), its model the row's model."""
    return _document(row, {"name": row.get("agent") or SOLVE_AGENT,
                           "model_name": row["model"]},
                     row.get("turns"), ROLLOUT_KEYS, "rollouts")
