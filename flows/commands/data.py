"""The commands that read a dataset (query, stats, card) and the dataset checks of ``run``.

Thin: parse, call :class:`tasks.dataset.Dataset`, print.  None of them imports Prefect or
Docker (``card`` imports matplotlib).  Every problem is a :class:`flows.commands.usage.UsageError`
or a :class:`tasks.dataset.DatasetError`: one line, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from flows.commands.help import command
from flows.commands.usage import UsageError, option_error

RUN_OUTPUT_OPTIONS = ["tasks", "seed", "backend", "ecosystem", "depth_weights", "max_depth",
                      "kinds", "off_scenario", "no_repair"]
"""Run options that --resume takes from the recorded run instead, besides every flag of the
candidate's settings."""


@contextlib.contextmanager
def hold_for_run(data: Path) -> Iterator[None]:
    """Hold ``data``'s writer lock for a run (unless this process holds it already), lent
    to the flow the run starts (which re-enters it), and make the checks every writer
    makes: a dataset another process writes, or one that is corrupt or holds shards its
    manifest cannot account for, raises DatasetError before anything is written."""
    from tasks.dataset import Dataset

    dataset = Dataset(data)
    with contextlib.ExitStack() as stack:
        if not dataset.holds_lock():
            stack.enter_context(dataset.lock(lend=True))
        with dataset.writable():
            pass
        yield


def resume_settings(args: argparse.Namespace):
    """(run id, settings) of the run that ``--resume`` continues."""
    from flows.settings import RunSettings
    from tasks.dataset import Dataset, DatasetError
    from tasks.stages.settings import CandidateSettings

    given = [f"--{o.replace('_', '-')}" for o in [*RUN_OUTPUT_OPTIONS,
                                                  *CandidateSettings.model_fields]
             if getattr(args, o) not in (None, False)]
    if given:
        raise UsageError(f"--resume continues a run with its recorded settings; drop "
                         f"{', '.join(given)}")
    if not (args.data / "_manifest.json").exists():
        raise UsageError(f"--resume: no dataset at {args.data}; start a run without --resume")
    try:
        run_id, recorded = Dataset(args.data).resumable(
            None if args.resume is True else args.resume)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    return run_id, RunSettings.model_validate(
        {**recorded, "data": args.data, "workers": args.workers or recorded["workers"],
         "shard_rows": args.shard_rows or recorded["shard_rows"]})


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
