"""The commands that read a dataset (query, stats, card) and the dataset checks of ``run``.

None of them imports Prefect or Docker (``card`` imports matplotlib).  Every problem is a
:class:`flows.usage.UsageError`: one line, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flows.usage import UsageError

OUTPUT_OPTIONS = ["tasks", "seed", "backend", "ecosystem", "depth_weights", "max_depth",
                  "max_repairs", "no_repair", "instruction_style"]
"""Run options that --resume takes from the recorded run instead."""


def dataset_manifest(data: Path):
    """The manifest of ``data`` (empty when new); a newer or broken dataset is a UsageError."""
    from tasks.manifest import DatasetError, load_manifest

    try:
        return load_manifest(data)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


def resume_settings(args: argparse.Namespace):
    """(run id, settings) of the run that ``--resume`` continues."""
    from flows.runs import resumable
    from flows.settings import RunSettings
    from tasks.manifest import DatasetError

    given = [f"--{o.replace('_', '-')}" for o in OUTPUT_OPTIONS if getattr(args, o)
             not in (None, False)]
    if given:
        raise UsageError(f"--resume continues a run with its recorded settings; drop "
                         f"{', '.join(given)}")
    if not (args.data / "_manifest.json").exists():
        raise UsageError(f"--resume: no dataset at {args.data}; start a run without --resume")
    manifest = dataset_manifest(args.data)
    try:
        run_id = resumable(manifest, str(args.data), None if args.resume is True else args.resume)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    recorded = manifest.runs[run_id].settings
    return run_id, RunSettings.model_validate(
        {**recorded, "data": args.data, "workers": args.workers or recorded["workers"],
         "shard_rows": args.shard_rows or recorded["shard_rows"]})


def _connect(args: argparse.Namespace, checksum: bool):
    """DuckDB views over ``--data``; a missing or newer dataset is a UsageError.

    Shard sizes are always checked against the manifest (a ``stat`` each: catches
    truncated and missing files); ``checksum`` also hashes every shard (catches any
    change, at the cost of reading the whole dataset once)."""
    from flows.query import connect
    from tasks.manifest import DatasetError

    if not args.data.is_dir():
        raise UsageError(f"no dataset at {args.data}; create one with "
                         f"`taskfactory run --data {args.data}`")
    try:
        return connect(args.data, checksum=checksum)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from flows.query import format_rows

    con = _connect(args, checksum=args.verify)
    try:
        cur = con.execute(args.sql)
        columns = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall()
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    print(format_rows(columns, rows, args.format))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from flows.stats import report
    from flows.stats_instructions import instruction_stats

    con = _connect(args, checksum=True)
    try:
        if args.format == "json":
            print(instruction_stats(con).model_dump_json(indent=2))
        else:
            print(report(con), end="")
    finally:
        con.close()
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from flows.card import write_card
    from tasks.manifest import DatasetError, open_for_writing

    con = _connect(args, checksum=True)
    try:
        with open_for_writing(args.data):
            path = write_card(args.data, con)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    finally:
        con.close()
    print(f"dataset card: {path} (plots in {args.data / 'plots'})")
    return 0
