"""``taskfactory check-harbor DIR``: run exported Harbor task folders the way Harbor does.

Each folder's ``task.toml`` names its task (``[metadata.taskfactory] task_id``); the row
comes from ``--data`` (the shortcut controls need its checks and trace).  Folders are
checked in parallel (``--workers``) by :func:`tasks.harbor_check.check_folder`; one line
per folder, then a summary per ecosystem.  Exit code 0 when every folder passed, 1 when
one did not, 2 on bad input.  Containers and images the check made are removed at the
end, also after Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.export_harbor import load_ecosystems, load_rows, task_source_options
from flows.usage import UsageError


def add_check_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-harbor", help="build and run exported Harbor task folders with "
                                            "the gate's controls (needs Docker)")
    p.add_argument("folders", type=Path, metavar="DIR",
                   help="one exported task folder, or a folder of them")
    task_source_options(p)
    p.add_argument("--workers", type=int, default=2, help="folders checked in parallel")
    p.add_argument("--report", type=Path, metavar="FILE", help="also write results as JSON")
    p.set_defaults(func=check_harbor)


def task_folders(root: Path) -> list[Path]:
    if (root / "task.toml").is_file():
        return [root]
    if not root.is_dir():
        raise UsageError(f"no exported task folder at {root}; export some with "
                         "`taskfactory export harbor --out DIR`")
    found = sorted(p for p in root.iterdir() if (p / "task.toml").is_file()
                   and not p.name.startswith("."))
    if not found:
        raise UsageError(f"{root} holds no task folder (none has a task.toml)")
    return found


def _task_id(folder: Path) -> str:
    try:
        meta = tomllib.loads((folder / "task.toml").read_text())["metadata"]["taskfactory"]
        return str(meta["task_id"])
    except (KeyError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{folder}/task.toml has no [metadata.taskfactory] task_id ({exc}); "
                         "it was not exported by taskfactory") from None


def check_harbor(args: argparse.Namespace) -> int:
    from tasks.harbor import ExportTask

    folders = task_folders(args.folders)
    ids = {folder: _task_id(folder) for folder in folders}
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in sorted(set(ids.values())))
    rows = {r.task_id: r for r in load_rows(args.data, f"task_id in ({quoted})")}
    missing = sorted(set(ids.values()) - set(rows))
    if missing:
        raise UsageError(f"{len(missing)} task(s) are not in {args.data} (e.g. {missing[0]}); "
                         "pass the dataset they were exported from with --data")
    ecos = load_ecosystems({r.ecosystem for r in rows.values()}, args.ecosystem_dir)
    work = [(ExportTask.of(rows[ids[f]], ecos[rows[ids[f]].ecosystem]), f) for f in folders]
    return run_checks(work, args.workers, args.report)


def _line(report) -> str:  # noqa: ANN001
    marks = " ".join(f"{c.name}={'err' if c.reward is None else f'{c.reward:g}'}"
                     for c in report.controls)
    status = "ok  " if report.ok else "FAIL"
    why = "" if report.ok else f"  -- {report.error or _failed(report) or report.identity}"
    return (f"{status} {Path(report.folder).name:<34} {marks:<58} "
            f"{'identical' if report.identical else 'NOT identical'} "
            f"({report.total_s:.1f} s){why}")


def _failed(report) -> str:  # noqa: ANN001
    bad = [c for c in report.controls if not c.ok]
    return "; ".join(f"{c.name}: {c.error or f'reward {c.reward}, solve exit {c.solve_exit}'}"
                     for c in bad)


def run_checks(work: list, workers: int, report: Path | None) -> int:
    """Check every (ExportTask, folder); print one line each and a summary."""
    try:
        import docker

        client = docker.from_env(timeout=900)
        client.ping()
    except Exception as exc:  # no SDK, no daemon
        raise UsageError(f"checking needs a Docker engine, and none answers ({exc}); start "
                         "one with `make engine`") from None
    from tasks.harbor_check import check_folder
    from tasks.harbor_container import remove_labelled, remove_run, sweep_stale

    stale = sweep_stale(client)
    if stale:
        print(f"removed {stale} containers and images left by killed checks")
    run = f"check-{os.getpid()}"
    results = []
    pool = ThreadPoolExecutor(max(1, workers))
    try:
        for result in pool.map(lambda w: check_folder(client, w[1], w[0], run), work):
            print(_line(result), flush=True)
            results.append(result)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        print(f"interrupted: {remove_labelled(client, run)} containers removed")
        raise SystemExit(130) from None
    finally:
        pool.shutdown(wait=False)
        remove_run(client, run)
    total, ok = Counter(r.ecosystem for r in results), Counter(r.ecosystem for r in results
                                                                if r.ok)
    for name in sorted(total):
        print(f"  {name:<12} {ok[name]:>4}/{total[name]:<4} folders passed")
    print(f"checked {len(results)} folders: {sum(ok.values())} passed, "
          f"{len(results) - sum(ok.values())} failed")
    if report is not None:
        report.write_text(json.dumps([_as_dict(r) for r in results], indent=2))
    return 0 if all(r.ok for r in results) else 1


def _as_dict(result) -> dict:  # noqa: ANN001
    from dataclasses import asdict

    return {**asdict(result), "ok": result.ok}
