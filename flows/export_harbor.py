"""``taskfactory export harbor``: the dataset's accepted tasks as Harbor task folders.

Reads the ``tasks`` table with DuckDB (optionally filtered by ``--where``), resolves each
task's ecosystem (built in, or a folder given with ``--ecosystem-dir``, which must be the
version the task was made with), regenerates and checks every environment, and only then
writes anything: each folder to a hidden temporary name in ``--out``, renamed into place
when complete.  Imports neither Prefect nor Docker (``--check`` imports Docker).

Bad input — no dataset, a ``--where`` that DuckDB rejects, an unwritable ``--out``, an
ecosystem that cannot be found or does not match — raises :class:`UsageError` before
anything is written.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections import Counter
from pathlib import Path

from flows.usage import UsageError

HARBOR_HINT = "harbor run -p {out} -a oracle (Harbor's docker environment needs `docker compose`)"


def add_export_parser(targets: argparse._SubParsersAction) -> None:
    """``export harbor`` and its options."""
    p = targets.add_parser("harbor", help="one Harbor task folder per accepted task")
    p.add_argument("--out", type=Path, required=True, help="folder to write the tasks into")
    task_source_options(p)
    p.add_argument("--where", metavar="SQL", help="DuckDB condition on the tasks table")
    p.add_argument("--network", choices=["public", "no-network"], default="public",
                   help="[environment] network_mode in task.toml (default %(default)s)")
    p.add_argument("--memory-mb", type=int, default=2048, help="[environment] memory_mb")
    p.add_argument("--check", action="store_true",
                   help="then build and check every folder (see `taskfactory check-harbor`)")
    p.add_argument("--workers", type=int, default=2, help="folders checked in parallel")
    p.set_defaults(func=export_harbor)


def task_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=Path("data"), help="dataset folder")
    p.add_argument("--ecosystem-dir", type=Path, action="append", default=[], metavar="DIR",
                   help="folder of a user ecosystem the tasks were made with (repeatable)")


def load_rows(data: Path, where: str | None = None) -> list:
    """The accepted tasks in ``data`` matching ``where``, one per task id."""
    from tasks.dataset import Dataset, QueryError

    try:
        return Dataset.open(data).task_rows(where)
    except QueryError as exc:
        raise UsageError(f"--where: {exc}") from None


def load_ecosystems(names: set[str], folders: list[Path]) -> dict:
    """Ecosystem by name: the ``--ecosystem-dir`` folders first, then the built-ins."""
    from environments.ecosystems import EcosystemError, builtin_names, load_ecosystem

    found = {}
    for folder in folders:
        try:
            eco = load_ecosystem(str(folder))
        except EcosystemError as exc:
            raise UsageError(f"--ecosystem-dir: {exc}") from None
        found.setdefault(eco.name, eco)
    for name in sorted(names - set(found)):
        if name not in builtin_names():
            raise UsageError(f"tasks use ecosystem {name!r}, which is not built in; pass its "
                             f"folder with --ecosystem-dir")
        found[name] = load_ecosystem(name)
    return found


def export_tasks(args: argparse.Namespace) -> list:
    """Every selected task with its rendered folder, or UsageError before any is written."""
    from tasks.harbor import ExportOptions, ExportTask, render_folder
    from tasks.harbor_env import ExportError

    rows = load_rows(args.data, args.where)
    if not rows:
        raise UsageError(f"no accepted task in {args.data} matches"
                         + (f" --where {args.where}" if args.where else "")
                         + "; look with `taskfactory query \"select ... from tasks\"`")
    ecos = load_ecosystems({r.ecosystem for r in rows}, args.ecosystem_dir)
    options = ExportOptions(network=args.network, memory_mb=args.memory_mb)
    rendered = []
    for row in rows:
        task = ExportTask.of(row, ecos[row.ecosystem])
        try:
            rendered.append((task, render_folder(task, options)))
        except ExportError as exc:
            raise UsageError(str(exc)) from None
    return rendered


def write_folder(out: Path, name: str, files: dict[str, tuple[bytes, int]]) -> Path:
    """Write one task folder under a hidden temporary name, then rename it to ``name``
    (replacing an older export of the same task).  Modes are set explicitly: the image
    build copies them."""
    tmp, final = out / f".{name}.tmp-{os.getpid()}", out / name
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for rel, (data, mode) in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(mode)
        for folder in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            folder.chmod(0o755)
        if final.exists():
            old = out / f".{name}.old-{os.getpid()}"
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def export_harbor(args: argparse.Namespace) -> int:
    from tasks.dataset.writer import check_writable

    if args.memory_mb < 256:
        raise UsageError(f"--memory-mb: at least 256, got {args.memory_mb}")
    rendered = export_tasks(args)
    try:
        check_writable(args.out)
    except OSError as exc:
        raise UsageError(f"cannot write to --out {args.out}: {exc.strerror or exc}; "
                         "choose a writable folder") from None
    written = [(task, write_folder(args.out, task.folder_name, files))
               for task, files in rendered]
    counts = Counter(task.row.ecosystem for task, _ in written)
    print(f"exported {len(written)} tasks to {args.out}/ ("
          + ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) + ")")
    if not args.check:
        print("run them with Harbor: " + HARBOR_HINT.format(out=args.out))
        return 0
    from flows.check_harbor import run_checks

    return run_checks(written, args.workers, report=None)
