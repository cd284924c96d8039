"""``taskfactory export sft``: trajectory shards -> JSONL for the common SFT trainers.

``openai`` rows are ``{"messages": [...], "tools": [...], task_id, trajectory_id,
supervision, action_space, reward, n_turns}`` in the OpenAI / Hugging Face chat shape:
``tools`` is a list of JSON-schema function definitions and tool-call ``arguments`` are
JSON objects (TRL's and transformers' chat-template shape); ``--arguments string`` keeps
them as JSON strings, as OpenAI's fine-tuning API wants.  Every message keeps ``train``
(axolotl: ``message_field_training: train``); assistant messages also keep ``weight``
(0/1, OpenAI fine-tuning, which trains assistant messages only).  Keys with no value
(``reasoning_content`` of masked rows, ``tool_calls`` of plain messages) are left out.

``sharegpt`` rows follow LLaMA-Factory's sharegpt format: ``conversations`` of
``{"from", "value"}`` with ``human``, ``function_call`` (the JSON ``{"name",
"arguments"}``), ``observation`` and ``gpt``, plus ``system`` and ``tools`` (a JSON
string).  Reasoning, when the row carries it, is prefixed as ``<think>...</think>``, the
thought markers LLaMA-Factory strips from function calls.  The format has no per-message
loss flag, so ``actobs`` cannot be expressed and is refused.

Rows stream from DuckDB into a temporary file next to ``--out``, renamed into place when
complete.  Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tasks.dataset.dataset import Dataset

FORMATS = ("openai", "sharegpt")
ARGUMENTS = ("object", "string")
_COLUMNS = "trajectory_id, task_id, supervision, action_space, reward, n_turns, messages, tools"
_ROLES = {"user": "human", "tool": "observation"}


class ExportError(ValueError):
    """Bad export input: the message names the problem and the fix."""


def _openai_message(m: dict, arguments: str) -> dict:
    out: dict = {"role": m["role"], "content": m["content"]}
    if m.get("reasoning_content") is not None:
        out["reasoning_content"] = m["reasoning_content"]
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": c["type"],
             "function": {"name": c["function"]["name"],
                          "arguments": (json.loads(c["function"]["arguments"])
                                        if arguments == "object"
                                        else c["function"]["arguments"])}}
            for c in m["tool_calls"]]
    for key in ("tool_call_id", "name"):
        if m.get(key) is not None:
            out[key] = m[key]
    out["train"] = bool(m["train"])
    if m["role"] == "assistant":
        out["weight"] = int(m["weight"])
    return out


def _thought(m: dict) -> str:
    reasoning = m.get("reasoning_content")
    return f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""


def _sharegpt_turns(messages: list[dict]) -> list[dict]:
    turns = []
    for m in messages:
        if m["role"] == "system":
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                call = {"name": c["function"]["name"],
                        "arguments": json.loads(c["function"]["arguments"])}
                turns.append({"from": "function_call",
                              "value": _thought(m) + json.dumps(call, ensure_ascii=False)})
        elif m["role"] == "assistant":
            turns.append({"from": "gpt", "value": _thought(m) + m["content"]})
        else:
            turns.append({"from": _ROLES[m["role"]], "value": m["content"]})
    return turns


def sft_row(row: tuple, fmt: str, arguments: str = "object") -> dict:
    """One exported record from one ``trajectories`` row (columns as in ``_COLUMNS``)."""
    trajectory_id, task_id, supervision, action_space, reward, n_turns, messages, tools = row
    meta = {"task_id": task_id, "trajectory_id": trajectory_id, "supervision": supervision,
            "action_space": action_space, "reward": reward, "n_turns": n_turns}
    if fmt == "openai":
        return {"messages": [_openai_message(m, arguments) for m in messages],
                "tools": json.loads(tools), **meta}
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return {"conversations": _sharegpt_turns(messages), "system": system, "tools": tools,
            **meta}


def export_sft(data: Path, out: Path, fmt: str, supervision: str, action_space: str,
               arguments: str = "object") -> int:
    """Write the JSONL file; returns the number of rows.  Raises :class:`ExportError` (or
    DatasetError: no dataset) before writing anything when the input is bad, and leaves no
    partial file behind."""
    dataset = Dataset.open(data)
    if fmt == "sharegpt" and supervision == "actobs":
        raise ExportError("--supervision actobs trains tool observations, which LLaMA-Factory's "
                          "sharegpt format cannot mark; use --format openai (axolotl reads its "
                          "per-message train flags)")
    if out.is_dir():
        raise ExportError(f"--out {out} is a folder; give a file path such as {out}/sft.jsonl")
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:
        raise ExportError(f"cannot write --out {out}: {exc.strerror or exc}; choose a path "
                          "in a writable folder") from None
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for row in dataset.rows(f"select {_COLUMNS} from trajectories where supervision "
                                    "= ? and action_space = ? order by task_id",
                                    [supervision, action_space]):
                f.write(json.dumps(sft_row(row, fmt, arguments), ensure_ascii=False) + "\n")
                count += 1
            f.flush()
            os.fsync(f.fileno())
        if count == 0:
            raise ExportError(f"no {action_space} trajectories with supervision {supervision} "
                              f"in {data}; check `taskfactory query \"select action_space, "
                              f"supervision, count(*) from trajectories group by all\"`")
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return count
