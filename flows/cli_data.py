"""The commands that read a dataset (query, stats, card) and the dataset checks of ``run``.

None of them imports Prefect or Docker (``card`` imports matplotlib).  Every problem is a
:class:`flows.usage.UsageError` or a :class:`tasks.dataset.manifest.DatasetError`: one line, exit
code 2, nothing written.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from flows.usage import UsageError

OUTPUT_OPTIONS = ["tasks", "seed", "backend", "ecosystem", "depth_weights", "max_depth",
                  "max_repairs", "no_repair", "instruction_style"]
"""Run options that --resume takes from the recorded run instead."""


def dataset_manifest(data: Path):
    """The manifest of ``data`` (empty when new); a newer or broken dataset is a UsageError."""
    from tasks.dataset.manifest import DatasetError, load_manifest

    try:
        return load_manifest(data)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


@contextlib.contextmanager
def hold_for_run(data: Path) -> Iterator[None]:
    """Hold ``data``'s writer lock for a run (unless this process holds it already), lent
    to the flow the run starts (which re-enters it), and make the checks every writer
    makes: a dataset another process writes, or one that is corrupt or holds shards its
    manifest cannot account for, raises DatasetError before anything is written."""
    from tasks.dataset.lock import dataset_lock, holds, open_for_writing

    with contextlib.ExitStack() as stack:
        if not holds(data):
            stack.enter_context(dataset_lock(data, lend=True))
        with open_for_writing(data):
            pass
        yield


def resume_settings(args: argparse.Namespace):
    """(run id, settings) of the run that ``--resume`` continues."""
    from flows.settings import RunSettings
    from tasks.dataset.manifest import DatasetError
    from tasks.dataset.runs import resumable

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


def _connect(args: argparse.Namespace):
    """DuckDB views over ``--data`` (every shard's sha256 checked; see
    :func:`tasks.dataset.query.connect`); UsageError when there is no dataset, DatasetError when
    it is unreadable or newer."""
    from tasks.dataset.query import connect

    _require_dataset(args.data)
    return connect(args.data)


def _require_dataset(data: Path) -> None:
    if not data.is_dir():
        raise UsageError(f"no dataset at {data}; create one with "
                         f"`taskfactory run --data {data}`")


def cmd_query(args: argparse.Namespace) -> int:
    import duckdb

    from tasks.dataset.query import ReadOnlyError, format_rows, run_query

    _require_dataset(args.data)
    try:
        columns, rows = run_query(args.data, args.sql)
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
    from tasks.dataset.stats import report
    from tasks.dataset.stats_instructions import instruction_stats

    con = _connect(args)
    try:
        if args.format == "json":
            print(instruction_stats(con).model_dump_json(indent=2))
        else:
            print(report(con), end="")
    finally:
        con.close()
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from tasks.dataset.card import write_card
    from tasks.dataset.lock import dataset_lock
    from tasks.dataset.manifest import DatasetError

    con = _connect(args)
    try:
        with dataset_lock(args.data):
            path = write_card(args.data, con)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    finally:
        con.close()
    print(f"dataset card: {path} (plots in {args.data / 'plots'})")
    return 0
