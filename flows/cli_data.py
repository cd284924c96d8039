"""The commands that read a dataset (query, stats, card) and the dataset checks of ``run``.

Thin: parse, call :class:`tasks.dataset.Dataset`, print.  None of them imports Prefect or
Docker (``card`` imports matplotlib).  Every problem is a :class:`flows.usage.UsageError`
or a :class:`tasks.dataset.DatasetError`: one line, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from flows.usage import UsageError

OUTPUT_OPTIONS = ["tasks", "seed", "backend", "ecosystem", "depth_weights", "max_depth", "kinds",
                  "off_scenario", "max_repairs", "no_repair", "instruction_style",
                  "require_observation", "strict"]
"""Run options that --resume takes from the recorded run instead."""


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

    given = [f"--{o.replace('_', '-')}" for o in OUTPUT_OPTIONS if getattr(args, o)
             not in (None, False)]
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
    import duckdb

    from tasks.dataset import Dataset, ReadOnlyError

    dataset = Dataset.open(args.data)
    try:
        columns, rows = dataset.query(args.sql)
    except ReadOnlyError as exc:
        raise UsageError(f"query: {exc}") from None
    except duckdb.PermissionException as exc:
        raise UsageError(f"query refused: {str(exc).splitlines()[0]} (queries read the "
                         "dataset's tables and nothing else)") from None
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {str(exc).splitlines()[0]}") from None
    print(format_rows(columns, rows, args.format))
    return 0


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


def format_rows(columns: list[str], rows: list[tuple], fmt: str, max_width: int = 60) -> str:
    """Query results for the terminal: an aligned table with cells cut at ``max_width``,
    CSV, or one JSON object per row."""
    if fmt == "json":
        return "\n".join(json.dumps(dict(zip(columns, r, strict=True)), default=str)
                         for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")  # not the module's default CRLF
        writer.writerow(columns)
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")

    def cell(v: object) -> str:
        s = "NULL" if v is None else str(v).replace("\n", "\\n")
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    cells = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths, strict=True))  # noqa: E731
    out = [line(columns), "-+-".join("-" * w for w in widths)] + [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
