"""Write one SFT export: the JSONL, its metadata sidecar and the trainer files beside it.

Options are checked before anything is read or written (:class:`ExportError`, one line
naming the problem and the fix).  Rows stream from DuckDB into temporary files next to
``--out``; when every row is written, the sidecar, the trainer configs and the README are
renamed into place, the JSONL last, so an interrupted export leaves no partial file.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tasks.dataset.dataset import Dataset
from tasks.exports.sft import ExportError
from tasks.exports.sft.configs import Export, beside
from tasks.exports.sft.families import FAMILIES, INLINE_THOUGHT, reasoning_warning
from tasks.exports.sft.rows import COLUMNS, hf_message, meta, sft_row

FORMATS = ("hf", "openai", "sharegpt")
ARGUMENTS = ("object", "string")


@dataclass(frozen=True)
class Options:
    """``arguments`` and ``reasoning_key`` None: the format's default (``object`` and
    ``reasoning_content`` for hf; openai and sharegpt take no choice)."""

    fmt: str = "hf"
    supervision: str = "masked"
    action_space: str = "function"
    arguments: str | None = None
    reasoning_key: str | None = None
    template_family: str | None = None
    tokenizer: Path | None = None
    source: str = "trajectories"
    """``trajectories`` (rendered from reference traces) or ``rollouts`` (the successful,
    grounded attempts of ``taskfactory solve``)."""
    where: str | None = None
    """A condition on ``tasks`` joined with ``difficulty`` (e.g. ``pass_at_k < 0.75``)."""


def _refusal(o: Options) -> str | None:
    if o.source == "rollouts" and o.supervision != "masked":
        return ("--source rollouts: attempts carry no reasoning and train their calls and "
                "answer only; use --supervision masked")
    if o.fmt == "openai" and o.supervision == "actobs":
        return ("--supervision actobs trains tool observations, which OpenAI fine-tuning "
                "cannot (it trains assistant messages only); use --format hf")
    if o.fmt == "sharegpt" and o.supervision == "actobs":
        return ("--supervision actobs trains tool observations, which LLaMA-Factory's "
                "sharegpt format cannot mark; use --format hf (axolotl reads its per-message "
                "train flags) or --tokenizer for labels")
    if o.fmt == "openai" and o.arguments not in (None, "string"):
        return ("--arguments object: OpenAI's fine-tuning schema takes arguments as JSON "
                "strings only; leave --arguments out")
    if o.fmt == "sharegpt" and o.arguments is not None:
        return ("--arguments does not apply to --format sharegpt (LLaMA-Factory reads "
                "function_call arguments as a JSON object); leave it out")
    if o.fmt != "hf" and o.reasoning_key not in (None, "inline"):
        return (f"--reasoning-key {o.reasoning_key} is an hf key; --format {o.fmt} carries "
                "reasoning in the text (openai: inline; sharegpt: the thought words of "
                "--template-family)")
    if o.tokenizer is not None and o.fmt != "hf":
        return f"--tokenizer writes token ids from hf rows; use --format hf, not {o.fmt}"
    if o.tokenizer is not None and o.arguments == "string":
        return ("--arguments string does not apply with --tokenizer (chat templates render "
                "tool-call arguments from objects); leave it out")
    return None


def resolve(o: Options) -> Options:
    """The options with the format's defaults filled in; raises :class:`ExportError` for
    a combination the target cannot express."""
    problem = _refusal(o)
    if problem:
        raise ExportError(problem)
    if o.fmt == "hf":
        return replace(o, arguments=o.arguments or "object",
                       reasoning_key=o.reasoning_key or "reasoning_content")
    return replace(o, arguments="string" if o.fmt == "openai" else "object",
                   reasoning_key="inline")


def warnings(o: Options, tok: Any) -> list[str]:
    """One line per way the chosen target and template would lose the reasoning."""
    if o.supervision == "masked":
        return []
    out = []
    line = reasoning_warning(o.fmt, o.reasoning_key or "", o.template_family)
    if line:
        out.append(line)
    if tok is not None and not _renders(tok, o.reasoning_key or ""):
        out.append(f"warning: the chat template in {o.tokenizer} does not render "
                   f"{o.reasoning_key}, so the reasoning is never trained; export with "
                   "--reasoning-key inline")
    family = FAMILIES.get(o.template_family or "")
    if o.fmt == "sharegpt" and family is not None and family.thought is None:
        out.append(f"warning: LLaMA-Factory's {family.llamafactory} template parses "
                   "function_call turns as bare JSON, so only the final answers carry "
                   "reasoning")
    return out


def _renders(tok: Any, key: str) -> bool:
    from tasks.exports.sft.labels import renders_reasoning

    return renders_reasoning(tok, key)


def _record(row: tuple, o: Options, tok: Any) -> dict:
    if tok is None:
        family = FAMILIES.get(o.template_family or "")
        thought = family.thought if family else INLINE_THOUGHT
        return sft_row(row, o.fmt, o.arguments or "object", o.reasoning_key or "", thought)
    from tasks.exports.sft.labels import tokenized

    record = dict(zip(COLUMNS, row, strict=True))
    messages = [hf_message(m, "object", o.reasoning_key or "") for m in record["messages"]]
    return tokenized(tok, messages, json.loads(record["tools"]))


class _Staged:
    """Temporary files next to their targets, renamed into place together."""

    def __init__(self) -> None:
        self.files: list[tuple[str, Path]] = []

    def open(self, target: Path):
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                       suffix=".tmp")
        except OSError as exc:
            raise ExportError(f"cannot write --out {target}: {exc.strerror or exc}; choose "
                              "a path in a writable folder") from None
        self.files.append((tmp, target))
        return os.fdopen(fd, "w", encoding="utf-8")

    def commit(self) -> None:
        for tmp, target in self.files:
            os.replace(tmp, target)

    def discard(self) -> None:
        for tmp, _ in self.files:
            Path(tmp).unlink(missing_ok=True)


def export_sft(data: Path, out: Path, options: Options,
               warn: Callable[[str], object] = lambda line: print(line, file=sys.stderr),
               ) -> int:
    """Write the export; returns the number of rows.  Raises :class:`ExportError` (or
    DatasetError: no dataset) before writing anything when the input is bad, and leaves no
    partial file behind."""
    o = resolve(options)
    dataset = Dataset.open(data)
    if out.is_dir():
        raise ExportError(f"--out {out} is a folder; give a file path such as {out}/sft.jsonl")
    tok = None
    if o.tokenizer is not None:
        from tasks.exports.sft.labels import load_tokenizer

        tok = load_tokenizer(o.tokenizer)
    for line in warnings(o, tok):
        warn(line)
    staged = _Staged()
    try:
        count = _write_rows(dataset, out, o, tok, staged)
        if count == 0:
            raise ExportError(f"no {o.action_space} {o.source} with supervision "
                              f"{o.supervision} in {data}"
                              + (f" matching --where {o.where}" if o.where else "")
                              + f"; check `taskfactory query \"select action_space, "
                              f"supervision, count(*) from {o.source} group by all\"`")
        e = Export(out, o.fmt, o.supervision, o.reasoning_key or "", tok is not None,
                   FAMILIES[o.template_family].llamafactory if o.template_family else None,
                   getattr(tok, "name_or_path", None))
        for name, text in beside(e, count).items():
            with staged.open(out.parent / name) as f:
                f.write(text)
        staged.files.reverse()  # the JSONL last
        staged.commit()
    finally:
        staged.discard()
    return count


def _write_rows(dataset: Dataset, out: Path, o: Options, tok: Any, staged: _Staged) -> int:
    with ExitStack() as stack:
        handles = [stack.enter_context(staged.open(out))]
        if o.fmt == "openai" or tok is not None:  # metadata to the sidecar, keyed by row
            handles.append(stack.enter_context(
                staged.open(out.with_name(f"{out.stem}.meta.jsonl"))))
        count = 0
        for row in _source_rows(dataset, o):
            lines = [_record(row, o, tok), {"row": count, **meta(row)}]
            for handle, line in zip(handles, lines, strict=False):
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
        for handle in handles:
            handle.flush()
            os.fsync(handle.fileno())
    return count


def task_filter(dataset: Dataset, where: str | None) -> tuple[str, list]:
    """SQL (`` and task_id in (...)``) keeping the tasks that match ``where`` on ``tasks``
    joined with ``difficulty``; ExportError when DuckDB refuses it."""
    if not where:
        return "", []
    sql = f"select task_id from tasks left join difficulty using (task_id) where {where}"
    import duckdb

    from tasks.dataset.query import ReadOnlyError, check_read_only

    con = dataset.connect()
    try:
        check_read_only(con, sql)
        con.execute(f"select count(*) from ({sql})")
    except (duckdb.Error, ReadOnlyError) as exc:
        raise ExportError(f"--where: {str(exc).splitlines()[0]}; it is a condition on the "
                          "columns of tasks and difficulty") from None
    finally:
        con.close()
    return f" and task_id in ({sql})", []


def _source_rows(dataset: Dataset, o: Options) -> Iterator[tuple]:
    """The rows to export, as :data:`COLUMNS` tuples: trajectories of the mode and space,
    or the successful rollouts of the space that pass the grounding check."""
    where, params = task_filter(dataset, o.where)
    if o.source == "trajectories":
        yield from dataset.rows(f"select {', '.join(COLUMNS)} from trajectories where "
                                f"supervision = ? and action_space = ?{where} order by task_id",
                                [o.supervision, o.action_space, *params])
        return
    from tasks.exports.sft.rollout_rows import OWN_ATTEMPTS, ungrounded

    for row in dataset.rows(f"select {', '.join(COLUMNS)} from rollouts where reward = 1 and "
                            f"action_space = ? and {OWN_ATTEMPTS}{where} "
                            "order by task_id, model, attempt",
                            [o.action_space, *params]):
        record = dict(zip(COLUMNS, row, strict=True))
        if ungrounded(record["messages"], json.loads(record["tools"]), o.action_space) is None:
            yield row
