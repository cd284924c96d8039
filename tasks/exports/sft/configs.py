"""The files written beside an export so that it trains as it is.

- ``<stem>.axolotl.yaml`` (``hf`` rows and pre-tokenized rows): an axolotl ``datasets:``
  entry, fields as axolotl's ``SFTDataset`` schema names them
  (``src/axolotl/utils/schemas/datasets.py``; ``docs/dataset-formats/conversation.qmd``
  and ``tokenized.qmd``);
- ``dataset_info.json`` (``sharegpt`` rows): the LLaMA-Factory dataset entry named
  ``<stem>``, merged into the folder's existing file, fields as LLaMA-Factory's
  ``data/README.md`` documents them;
- ``<stem>.README.md`` (every export): what the file holds, the minimum ``datasets``
  version that loads it intact and the command that trains on it.

Each function returns ``{file name: text}``; :mod:`tasks.exports.sft.export` writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from tasks.exports.sft import ExportError

MIN_DATASETS = "4.7"
"""``datasets`` before 4.7 merges the struct fields of all rows and fills the missing ones with
nulls (tool schemas gain null properties, arguments gain null keys); 4.7 and later keep
mixed structs as JSON."""


@dataclass(frozen=True)
class Export:
    """What was exported: the JSONL path and the options that shaped it."""

    out: Path
    fmt: str
    supervision: str
    key: str
    tokenized: bool
    llamafactory_template: str | None = None
    template_name: str | None = None


def axolotl_yaml(e: Export) -> str:
    """The axolotl dataset entry for ``hf`` rows (per-message ``train`` flags decide the
    loss) or for pre-tokenized rows (``type:`` empty: labels as written)."""
    entry: dict = {"path": str(e.out.resolve()), "ds_type": "json"}
    if e.tokenized:
        entry["type"] = None
    else:
        entry |= {"type": "chat_template", "field_messages": "messages",
                  "field_tools": "tools", "message_field_training": "train",
                  "roles_to_train": [], "train_on_eos": "turn"}
        if e.key != "inline":
            entry |= {"field_thinking": e.key, "template_thinking_key": e.key}
    head = (f"# axolotl datasets entry for {e.out.name} ({e.supervision}); add base_model "
            "and the training settings, then: axolotl train <this file>\n")
    return head + yaml.safe_dump({"datasets": [entry]}, sort_keys=False)


def llamafactory_entry(e: Export) -> dict:
    """The ``dataset_info.json`` entry (name: the file's stem) for ``sharegpt`` rows."""
    return {e.out.stem: {
        "file_name": e.out.name, "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
                 "assistant_tag": "gpt", "observation_tag": "observation",
                 "function_tag": "function_call"}}}


def merged_dataset_info(e: Export) -> str:
    """The folder's ``dataset_info.json`` with this export's entry added or replaced."""
    path = e.out.parent / "dataset_info.json"
    try:
        info = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict):
        raise ExportError(f"{path} is not a readable JSON object, so this export's entry "
                          "cannot be added to it; fix it or move it away")
    info.update(llamafactory_entry(e))
    return json.dumps(info, indent=2, ensure_ascii=False) + "\n"


def _train_command(e: Export) -> str:
    if e.fmt == "openai":
        return (f"with the openai package, file = client.files.create(file=open("
                f"\"{e.out.name}\", \"rb\"), purpose=\"fine-tune\"), then "
                "client.fine_tuning.jobs.create(training_file=file.id, model=<model>)")
    if e.fmt == "sharegpt":
        template = e.llamafactory_template or "<template>"
        return (f"llamafactory-cli train with dataset_dir: {e.out.parent.resolve()}, "
                f"dataset: {e.out.stem}, template: {template}, stage: sft")
    return f"axolotl train {e.out.stem}.axolotl.yaml (after adding base_model and settings)"


def _reasoning_line(e: Export) -> str:
    if e.supervision == "masked":
        return "Reasoning: none (masked rows carry none)."
    if e.fmt == "sharegpt":
        return "Reasoning: in the thought words of the template family, before each turn."
    if e.key == "inline":
        return "Reasoning: inline, <think>...</think> before the content."
    return f"Reasoning: under the message key {e.key}."


def readme(e: Export, rows: int) -> str:
    """The short README beside the export."""
    shape = ("input_ids, attention_mask, labels (-100 where the loss is off)" if e.tokenized
             else {"hf": "messages + tools, per-message train/weight",
                   "openai": "messages + tools, OpenAI's documented keys only",
                   "sharegpt": "conversations + system + tools"}[e.fmt])
    lines = [f"# {e.out.name}", "",
             f"{rows} rows, format {e.fmt}, supervision {e.supervision}: {shape}.",
             _reasoning_line(e),
             "", f"Load with Hugging Face `datasets` >= {MIN_DATASETS}: older versions merge "
             "struct fields across rows and fill the missing ones with nulls, which chat "
             "templates then render.", "", f"Train: {_train_command(e)}."]
    if e.fmt == "openai" or e.tokenized:
        lines += ["", f"Row metadata (task and trajectory ids, reward) is in {e.out.stem}"
                  ".meta.jsonl, one line per row in the same order (`row`: the line number)."]
    if e.template_name:
        lines += ["", f"Tokenized with the chat template of {e.template_name}."]
    return "\n".join(lines) + "\n"


def beside(e: Export, rows: int) -> dict[str, str]:
    """Every file to write next to the JSONL: ``{file name: text}``."""
    files = {f"{e.out.stem}.README.md": readme(e, rows)}
    if e.fmt == "hf":
        files[f"{e.out.stem}.axolotl.yaml"] = axolotl_yaml(e)
    if e.fmt == "sharegpt":
        files["dataset_info.json"] = merged_dataset_info(e)
    return files
