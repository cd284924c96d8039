"""Which rollouts are teacher data: grounding and the pairs of preference exports.

A successful attempt (reward 1) is exported only when every value it used was visible when
it used it (:func:`tasks.rules.grounding.first_ungrounded`, the check every trajectory passes):
in the ``terminal`` space the names each command uses, in ``function`` the arguments.
A preference pair is one successful (grounded) and one failed attempt at the same task by
the same model and in the same action space; the i-th success, by attempt index, is paired
with the i-th failure, so a task gives min(successes, failures) pairs.  Both read only the
attempts of ``solve``'s own agent (:data:`OWN_ATTEMPTS`).  Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable

from schemas.records import SOLVE_AGENT, Message
from tasks.rules.grounding import first_ungrounded

OWN_ATTEMPTS = f"coalesce(agent, '{SOLVE_AGENT}') = '{SOLVE_AGENT}'"
"""SQL keeping the attempts of ``solve``'s own agent loop, whose tools are the task's: an
imported attempt of another agent counts in ``difficulty`` but is no teacher data here."""
PAIR_COLUMNS = ("task_id", "model", "action_space", "attempt", "reward", "trajectory_id",
                "messages", "tools")


def ungrounded(messages: list[dict], tools: list[dict], action_space: str) -> str | None:
    """Why a rollout is not grounded, or None."""
    parsed = [Message.model_validate(m) for m in messages]
    calls = sum(len(m.tool_calls or []) for m in parsed)
    values: list[dict[str, object]] | None = (
        [{} for _ in range(calls)] if action_space == "terminal" else None)
    return first_ungrounded(parsed, tools, values)


def preference_pairs(rows: Iterable[dict]) -> list[tuple[dict, dict]]:
    """(chosen, rejected) rollouts, rows keyed as :data:`PAIR_COLUMNS`, with ``tools``
    already parsed; ungrounded successes are never chosen."""
    groups: dict[tuple, tuple[list[dict], list[dict]]] = {}
    for row in sorted(rows, key=lambda r: (r["task_id"], r["model"], r["action_space"],
                                           r["attempt"])):
        won, lost = groups.setdefault((row["task_id"], row["model"], row["action_space"]),
                                      ([], []))
        if row["reward"] == 1:
            if ungrounded(row["messages"], row["tools"], row["action_space"]) is None:
                won.append(row)
        else:
            lost.append(row)
    return [pair for won, lost in groups.values() for pair in zip(won, lost, strict=False)]


def dpo_record(chosen: dict, rejected: dict) -> dict:
    """One DPO row (TRL's conversational preference shape): the shared ``prompt`` (system
    and user messages), then each attempt's own messages as ``chosen`` / ``rejected``.
    Tool-call ``arguments`` stay JSON strings, as the endpoint sent them: a rejected
    attempt's may not parse."""
    from tasks.exports.sft.rows import hf_message

    def split(row: dict) -> tuple[list[dict], list[dict]]:
        messages = [hf_message(m, "string") for m in row["messages"]]
        for m in messages:
            m.pop("train", None)
            m.pop("weight", None)
        return messages[:2], messages[2:]

    prompt, good = split(chosen)
    _, bad = split(rejected)
    return {"prompt": prompt, "chosen": good, "rejected": bad, "tools": chosen["tools"],
            "task_id": chosen["task_id"], "model": chosen["model"],
            "chosen_id": chosen["trajectory_id"], "rejected_id": rejected["trajectory_id"]}
