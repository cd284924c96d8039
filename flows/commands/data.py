"""The commands that read a dataset: query, stats, card and export sft.

Thin: parse, call :class:`tasks.dataset.Dataset`, print.  None of them imports Prefect or
Docker (``card`` imports matplotlib).  Every problem is a :class:`flows.commands.usage.UsageError`
or a :class:`tasks.dataset.DatasetError`: one line, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from flows.commands.arguments import number, path, text
from flows.commands.help import command
from flows.commands.usage import UsageError, option_error


def cmd_query(args: argparse.Namespace) -> int:
    """One user SELECT, bounded (:mod:`tasks.dataset.query_bounds`), its rows streamed to
    stdout; Ctrl-C or SIGTERM stops DuckDB at once (KeyboardInterrupt: exit 130)."""
    import duckdb
    from pydantic import ValidationError

    from flows.commands.rows_output import write_rows
    from tasks.dataset import Dataset, ReadOnlyError
    from tasks.dataset.query import user_query
    from tasks.dataset.query_bounds import QueryBounds, Watchdog

    try:
        given = {"memory_limit": args.memory_limit, "timeout_s": args.timeout}
        bounds = QueryBounds.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise option_error(exc, {"timeout_s": "--timeout"}) from None
    dataset = Dataset.open(args.data)
    with contextlib.closing(dataset.connect(bounds.settings())) as con, \
            Watchdog(con, bounds.timeout_s) as watchdog:
        try:
            columns, batches = user_query(con, args.sql)
            write_rows(columns, batches, args.format, sys.stdout)
        except ReadOnlyError as exc:
            raise UsageError(f"query: {exc}") from None
        except duckdb.PermissionException as exc:
            raise UsageError(f"query refused: {str(exc).splitlines()[0]} (queries read the "
                             "dataset's tables and nothing else)") from None
        except (duckdb.CatalogException, duckdb.BinderException) as exc:
            raise UsageError(f"query failed: {str(exc).splitlines()[0]} "
                             f"{_what_exists(con, args.sql, args.data)}") from None
        except Exception as exc:  # DuckDB reports an interrupt as a RuntimeError too
            raise _query_failure(exc, watchdog.stopped, bounds.timeout_s) from None
    return 0


def _what_exists(con, sql: str, data: Path) -> str:  # noqa: ANN001
    """For a query that names a table or column that does not exist: the dataset's tables
    and the columns of those ``sql`` names (every table's, when it names none)."""
    import re

    rows = con.execute("select table_name, column_name from duckdb_columns() where not "
                       "internal and table_name not like '\\_%' escape '\\' "
                       "order by table_name, column_index").fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    named = [t for t in columns if re.search(rf"\b{t}\b", sql, re.IGNORECASE)]
    listed = "; ".join(f"{t}: {', '.join(columns[t])}" for t in named)
    return (f"(tables: {', '.join(columns)}" + (f"; columns of {listed}" if listed else "")
            + f"; `{command()} query \"describe tasks\" --data {data}` lists a table's columns)")


def _query_failure(exc: Exception, stopped: str | None, timeout_s: float) -> BaseException:
    """What ``taskfactory query`` raises for ``exc``: the timeout or a DuckDB error as one
    line, an interrupt as KeyboardInterrupt; anything else as it is."""
    import duckdb

    from tasks.dataset.interrupts import is_interrupt

    if stopped == "timeout":
        return UsageError(f"query stopped at --timeout {timeout_s:g} s; narrow it, or give "
                          "it more time (--timeout 0: no limit)")
    if stopped == "signal" or is_interrupt(exc):
        return KeyboardInterrupt()
    if isinstance(exc, duckdb.Error):
        return UsageError(f"query failed: {str(exc).splitlines()[0]}")
    return exc  # a QueryError is one line already; anything else is a bug: its traceback


def cmd_stats(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset

    dataset = Dataset.open(args.data)
    if args.format == "json":
        print(dataset.instruction_stats().model_dump_json(indent=2))
    else:
        print(dataset.report(), end="")
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset

    dataset = Dataset.open(args.data)
    with dataset.lock():
        path, _ = dataset.write_card()
    print(f"dataset card: {path} (plots in {args.data / 'plots'})")
    return 0


def cmd_export_sft(args: argparse.Namespace) -> int:
    from tasks.dataset.dataset import readable
    from tasks.exports.sft import ExportError
    from tasks.exports.sft.export import Options, export_sft

    options = Options(args.format, args.supervision, args.action_space, args.arguments,
                      args.reasoning_key, args.template_family, args.tokenizer, args.source,
                      args.where)
    try:
        with readable(args.data, keep=(ExportError,)):
            n = export_sft(args.data, args.out, options)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    shape = f"{args.format} tokenized" if args.tokenizer else args.format
    print(f"wrote {n} {args.action_space}/{args.supervision} {args.source} as {shape} "
          f"JSONL to {args.out}, with its trainer files beside it")
    return 0


def add_dataset_parsers(sub: argparse._SubParsersAction) -> None:
    """``query``, ``stats`` and ``card``: the commands that read a dataset."""
    query = sub.add_parser("query", help="SQL over the dataset (DuckDB)")
    query.add_argument("sql", type=text,
                       help="one SELECT (DuckDB SQL) over the tables tasks, trajectories, "
                            "steps, attempts, runs, rollouts and difficulty; quote it")
    query.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    query.add_argument("--verify", action="store_true",
                       help="accepted for old scripts; does nothing: every shard's sha256 is "
                            "always checked")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table",
                       help="table: aligned columns; csv: with a header row; json: JSON "
                            "Lines, one object per row")
    query.add_argument("--memory-limit", type=text, metavar="SIZE",
                       help="DuckDB's memory limit (default 2GB); beyond it the query "
                            "spills to a scratch folder under TMPDIR")
    query.add_argument("--timeout", type=number, metavar="S",
                       help="stop the query after S seconds (default 600; 0: never)")
    query.set_defaults(func=cmd_query)
    stats = sub.add_parser("stats", help="yield, rejections, repairs, distributions and "
                                         "instruction diversity")
    stats.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    stats.add_argument("--format", choices=["text", "json"], default="text",
                       help="json: the instruction-diversity figures as JSON")
    stats.set_defaults(func=cmd_stats)
    card = sub.add_parser("card", help="rewrite the dataset card (README.md + plots)")
    card.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    card.set_defaults(func=cmd_card)


def add_sft_export_parser(targets: argparse._SubParsersAction) -> None:
    """``export sft``."""
    from tasks.exports.sft.families import FAMILIES, REASONING_KEYS

    sft = targets.add_parser("sft", help="trajectories as JSONL for SFT trainers")
    sft.add_argument("--format", choices=["hf", "openai", "sharegpt"], default="hf",
                     help="hf: messages + tools with per-message train flags (TRL, axolotl); "
                          "openai: OpenAI fine-tuning rows; sharegpt: LLaMA-Factory")
    sft.add_argument("--supervision", choices=["masked", "full", "actobs"], default="masked")
    sft.add_argument("--action-space", choices=["function", "terminal"], default="function")
    sft.add_argument("--arguments", choices=["object", "string"],
                     help="hf: tool-call arguments as JSON objects (default) or strings")
    sft.add_argument("--reasoning-key", choices=REASONING_KEYS,
                     help="hf: where reasoning goes (default reasoning_content; inline: "
                          "<think>...</think> before the content)")
    sft.add_argument("--template-family",
                     choices=list(FAMILIES),
                     help="the chat template the rows will meet: warns when it drops the "
                          "reasoning; sharegpt: its thought words")
    sft.add_argument("--tokenizer", type=path, metavar="DIR",
                     help="local tokenizer folder with a chat template: write input_ids, "
                          "attention_mask and labels (the supervision mask per token)")
    sft.add_argument("--source", choices=["trajectories", "rollouts"], default="trajectories",
                     help="rollouts: the successful, grounded attempts of `taskfactory solve`")
    sft.add_argument("--where", type=text, help="condition on tasks and difficulty, e.g. "
                                     "\"pass_at_k < 0.75\"")
    sft.add_argument("--out", type=path, required=True, help="JSONL file to write")
    sft.add_argument("--data", type=path, default=Path("data"))
    sft.set_defaults(func=cmd_export_sft)
