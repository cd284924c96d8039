"""``taskfactory export harbor`` and ``taskfactory check-harbor``: parse, call
:mod:`tasks.exports.harbor`, print.

``export harbor`` reads the dataset's accepted tasks (``--where`` filters them), renders
and checks every folder, and only then writes each one in place; it imports neither
Prefect nor Docker (``--check`` imports Docker, and so does a reconstruct task, whose
public examples are made in a sandbox).  ``check-harbor`` builds and runs
exported folders the way Harbor does, with the gate's controls, ``--workers`` at a time:
one line per folder, then a summary per ecosystem.  Exit code 0 when every folder passed,
1 when one did not, 2 on bad input (nothing written); containers and images the check
made are removed at the end, also after Ctrl-C (exit code 130).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from flows.commands.arguments import add_trust_option, path, text
from flows.commands.usage import UsageError
from flows.run.progress import Ticker

if TYPE_CHECKING:
    from tasks.exports.harbor.check import FolderReport
    from tasks.exports.harbor.source import ExportTask

HARBOR_HINT = "harbor run -p {out} -a oracle (Harbor's docker environment needs `docker compose`)"


def add_export_parser(targets: argparse._SubParsersAction) -> None:
    """``export harbor`` and its options."""
    p = targets.add_parser("harbor", help="one Harbor task folder per accepted task")
    p.add_argument("--out", type=path, required=True, help="folder to write the tasks into")
    _task_source_options(p)
    p.add_argument("--where", type=text, metavar="SQL",
                   help="DuckDB condition on the tasks table and the difficulty view, "
                        "e.g. \"pass_at_k < 0.75\"")
    p.add_argument("--network", choices=["public", "no-network"], default="public",
                   help="[environment] network_mode in task.toml (default %(default)s)")
    p.add_argument("--memory-mb", type=int, default=2048, help="[environment] memory_mb")
    p.add_argument("--check", action="store_true",
                   help="then build and check every folder (see `taskfactory check-harbor`)")
    p.add_argument("--workers", type=int, default=2, help="folders checked in parallel")
    p.set_defaults(func=export_harbor)


def add_check_parser(sub: argparse._SubParsersAction) -> None:
    """``check-harbor`` and its options."""
    p = sub.add_parser("check-harbor", help="build and run exported Harbor task folders with "
                                            "the gate's controls (needs Docker)")
    p.add_argument("folders", type=path, metavar="DIR",
                   help="one exported task folder, or a folder of them")
    _task_source_options(p)
    p.add_argument("--workers", type=int, default=2, help="folders checked in parallel")
    p.add_argument("--report", type=path, metavar="FILE", help="also write results as JSON")
    p.set_defaults(func=check_harbor)


def _task_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    p.add_argument("--ecosystem-dir", type=path, action="append", default=[], metavar="DIR",
                   help="folder of a user ecosystem the tasks were made with, or the file of "
                        "a stack with one (repeatable)")
    add_trust_option(p)


@contextlib.contextmanager
def _bad_input() -> Iterator[None]:
    """A :class:`tasks.exports.harbor.HarborError` is the user's to fix: a one-line usage error."""
    from tasks.exports.harbor import HarborError

    try:
        yield
    except HarborError as exc:
        raise UsageError(str(exc)) from None


def export_harbor(args: argparse.Namespace) -> int:
    from tasks.dataset.dataset import readable
    from tasks.dataset.store.paths import check_writable
    from tasks.exports.harbor import HarborError
    from tasks.exports.harbor.export import ExportOptions, check_target, render_folder, write_folder
    from tasks.exports.harbor.source import selected_tasks

    if args.memory_mb < 256:
        raise UsageError(f"--memory-mb: at least 256, got {args.memory_mb}")
    options = ExportOptions(network=args.network, memory_mb=args.memory_mb)
    with _bad_input(), readable(args.data, keep=(HarborError,)):
        tasks = selected_tasks(args.data, args.where, args.ecosystem_dir)
        names = [task.folder_name for task in tasks]  # each a plain name, or one line
        rendered = [(task, render_folder(task, options)) for task in tasks]
        for name in names:  # before any is written: all of them, or none
            check_target(args.out, name)
    check_writable(args.out, "to --out")  # StorageError: one line, nothing created
    with _bad_input():
        written = [(task, write_folder(args.out, name, files))
                   for (task, files), name in zip(rendered, names, strict=True)]
    counts = Counter(task.row.ecosystem for task, _ in written)
    print(f"exported {len(written)} tasks to {args.out}/ ("
          + ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) + ")")
    if not args.check:
        print("run them with Harbor: " + HARBOR_HINT.format(out=args.out))
        return 0
    return _run_checks(written, args.workers, report=None)


def check_harbor(args: argparse.Namespace) -> int:
    from tasks.exports.harbor.source import folder_tasks, task_folders

    with _bad_input():
        work = folder_tasks(task_folders(args.folders), args.data, args.ecosystem_dir)
    return _run_checks(work, args.workers, args.report)


def _run_checks(work: list[tuple[ExportTask, Path]], workers: int, report: Path | None) -> int:
    """Check every (task, folder); print one line each and a summary."""
    from tasks.exports.harbor.check import CheckInterrupted, check_all

    def swept(n: int) -> None:
        if n:
            print(f"removed {n} containers and images left by killed checks")

    def checked(r: FolderReport) -> None:
        print(_line(r), flush=True)
        ticker.done(r.ok)

    try:
        with _bad_input(), Ticker(len(work), words=("passed", "failed")) as ticker:
            results = check_all(work, workers, checked, swept)
    except CheckInterrupted as exc:
        print(f"interrupted: {exc.removed} containers removed")
        raise SystemExit(130) from None
    total = Counter(r.ecosystem for r in results)
    ok = Counter(r.ecosystem for r in results if r.ok)
    for name in sorted(total):
        print(f"  {name:<12} {ok[name]:>4}/{total[name]:<4} folders passed")
    print(f"checked {len(results)} folders: {sum(ok.values())} passed, "
          f"{len(results) - sum(ok.values())} failed")
    if report is not None:
        report.write_text(json.dumps([{**asdict(r), "ok": r.ok} for r in results], indent=2))
    return 0 if all(r.ok for r in results) else 1


def _line(report: FolderReport) -> str:
    marks = " ".join(f"{c.name}={'err' if c.reward is None else f'{c.reward:g}'}"
                     for c in report.controls)
    status = "ok  " if report.ok else "FAIL"
    why = "" if report.ok else f"  -- {report.error or _failed(report) or report.identity}"
    return (f"{status} {Path(report.folder).name:<34} {marks:<58} "
            f"{'identical' if report.identical else 'NOT identical'} "
            f"({report.total_s:.1f} s){why}")


def _failed(report: FolderReport) -> str:
    bad = [c for c in report.controls if not c.ok]
    return "; ".join(f"{c.name}: {c.error or f'reward {c.reward}, solve {c.solved}'}"
                     for c in bad)
