"""``taskfactory repair`` and ``taskfactory vacuum``: the commands that mend a dataset
folder and the only one that deletes from it.

``repair`` holds the dataset lock throughout.  It quarantines corrupt commits and rebuilds
a missing or older manifest (:mod:`tasks.dataset.store.repair`, which imports neither Prefect
nor Docker), then re-runs the quarantined candidates of complete runs: a flow run of the
owning run with its recorded settings, restricted to those candidates (only then are
Prefect and the sandbox backend imported).  What is still to re-run is recorded in the
manifest first (``pending``), so an interrupted repair is finished by the next one.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from flows.commands.arguments import add_trust_option, path
from flows.commands.help import command
from flows.commands.usage import UsageError

if TYPE_CHECKING:
    from tasks.dataset import Dataset


def add_repair_parsers(sub: argparse._SubParsersAction) -> None:
    repair = sub.add_parser("repair", help="quarantine corrupt shards, rebuild a missing or "
                                           "older manifest, re-run the candidates lost")
    repair.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    add_trust_option(repair)
    repair.set_defaults(func=cmd_repair)
    vacuum = sub.add_parser("vacuum", help="delete unreferenced shard and temp files older "
                                           "than a retention window")
    vacuum.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    vacuum.add_argument("--older-than", required=True, metavar="DURATION",
                        help="retention window: 30m, 12h, 7d, 2w (0s: everything)")
    vacuum.add_argument("--dry-run", action="store_true", help="list, delete nothing")
    vacuum.add_argument("--quarantine", action="store_true",
                        help="also delete quarantine folders older than the window")
    vacuum.set_defaults(func=cmd_vacuum)


def cmd_repair(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset
    from tasks.dataset.store.repair import apply_repair, existing_shards, plan_repair, rerun_done

    dataset = Dataset.open(args.data)
    data = dataset.path
    with dataset.lock(lend=True):
        plan = plan_repair(data)
        for note in plan.notes:
            print(f"  {note}")
        if not plan.changes:
            print(f"repair {data}: nothing to repair ({len(plan.manifest.shards)} shards "
                  "listed, every sha256 verified)")
            return 0
        folder = apply_repair(data, plan, datetime.now(UTC).strftime("%Y%m%dT%H%M%S"))
        if folder is not None:
            print(f"quarantined {len(plan.quarantine)} files in {folder}/")
        if plan.rebuilt:
            print(f"rebuilt {data}/_manifest.json: {len(plan.manifest.shards)} shards of "
                  f"{existing_shards(data)} on disk ({plan.adopted} unlisted commits "
                  f"adopted, {len(plan.manifest.abandoned)} files left out as abandoned)")
        for run_id, n in plan.unfinished.items():
            print(f"run {run_id} is unfinished: `{command()} run --resume {run_id} --data "
                  f"{data}` runs its {n} lost candidates with the rest")
        for run_id in list(plan.manifest.pending):
            _rerun(dataset, run_id, plan.manifest.pending[run_id])
            rerun_done(data, run_id)
        with dataset.writable():  # every check a writer makes now passes
            pass
    print(f"repair {data}: done; the dataset is consistent "
          f"({len(dataset.manifest().shards)} shards listed, every sha256 verified)")
    return 0


def _rerun(dataset: Dataset, run_id: str, ids: list[str]) -> None:
    """Run ``ids`` of the complete run ``run_id`` again with its recorded settings, with
    the temporary Prefect server of ``run`` when no server is configured (in a session of
    its own, stopped when repair ends, and killed with it)."""
    from pydantic import ValidationError

    from environments.docker.config import docker_available
    from flows.commands.api_server import ServerError, quiet_prefect, server_unless_configured
    from flows.settings import RunSettings

    data = dataset.path
    try:
        settings = RunSettings.model_validate({**dataset.manifest().runs[run_id].settings,
                                               "data": data})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UsageError(f"run {run_id} has candidates to re-run but its recorded settings are "
                         f"not valid ({'.'.join(map(str, first['loc']))}: {first['msg']}); the "
                         f"manifest was damaged: restore {data}/_manifest.json from a backup"
                         ) from None
    if settings.backend == "docker" and not docker_available():
        raise UsageError(f"run {run_id} ran on the docker backend and no Docker daemon "
                         "answers; start one (make engine) and repair again")
    print(f"re-running {len(ids)} candidates of run {run_id} with its recorded settings",
          flush=True)
    quiet_prefect()
    server = server_unless_configured()
    from flows.factory import run_factory
    from flows.run.providers import close_run

    try:
        if server is not None:
            server.wait_ready(float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]))
        summary = run_factory(settings, run_id=run_id, resume=True, only=ids)
    except KeyboardInterrupt:
        removed = close_run(run_id)
        print(f"interrupted: {removed} sandboxes removed; `{command()} repair --data {data}` "
              "finishes the repair", file=sys.stderr)
        raise SystemExit(130) from None
    except ServerError as exc:
        raise UsageError(str(exc)) from None
    print(f"run {run_id}: {len(ids)} candidates re-run, {summary.accepted} of the run's "
          f"{summary.candidates} candidates accepted")


def cmd_vacuum(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset
    from tasks.dataset.store.vacuum import parse_duration, vacuum

    try:
        seconds = parse_duration(args.older_than)
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None
    verb = "would delete" if args.dry_run else "deleting"
    doomed = vacuum(Dataset.open(args.data).path, seconds, args.quarantine, args.dry_run,
                    announce=lambda d: print(f"{verb} {d.path} ({d.why}, {d.bytes} bytes, "
                                             f"{d.age_s / 3600:.1f} h old)"))
    total = sum(d.bytes for d in doomed)
    print(f"vacuum {args.data}: {len(doomed)} files ({total} bytes) older than "
          f"{args.older_than} {'would be deleted (--dry-run)' if args.dry_run else 'deleted'}")
    return 0
