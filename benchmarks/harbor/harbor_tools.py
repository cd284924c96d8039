"""Shared by the Harbor benchmarks: find Harbor, export a sample, run Harbor jobs.

Harbor is not a dependency of taskfactory (it needs Python >= 3.12).  The scripts use the
``harbor`` executable named by ``--harbor``, else ``$TASKFACTORY_HARBOR``, else the one on
PATH, and stop with a clear message when there is none, or when ``docker compose`` (which
Harbor's docker environment drives) does not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schemas.records import TaskRow  # noqa: E402
from tasks.exports.harbor.export import ExportOptions, render_folder, write_folder  # noqa: E402
from tasks.exports.harbor.source import ExportTask, load_ecosystems, load_rows  # noqa: E402

HARBOR_ENV = "TASKFACTORY_HARBOR"


def parser(doc: str, n: int) -> argparse.ArgumentParser:
    """The options both Harbor scripts take: --data, --n, --concurrency, --harbor,
    --ecosystem-dir."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a dataset with accepted tasks")
    ap.add_argument("--n", type=int, default=n, help="tasks to sample")
    ap.add_argument("--concurrency", type=int, default=4, help="tasks at a time")
    ap.add_argument("--harbor", help=f"the harbor executable (default ${HARBOR_ENV})")
    ap.add_argument("--ecosystem-dir", type=Path, action="append", default=[])
    ap.add_argument("--folders", type=Path, help="use these exported folders of DATA instead")
    return ap


def find_harbor(explicit: str | None) -> str:
    """The harbor executable to use; exits with a message when there is none."""
    harbor = explicit or os.environ.get(HARBOR_ENV) or shutil.which("harbor")
    if not harbor or not Path(harbor).is_file():
        sys.exit(f"harbor not found: pass --harbor PATH or set {HARBOR_ENV} to the `harbor` "
                 "executable (PyPI package `harbor`, Python >= 3.12, in its own venv)")
    compose = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if compose.returncode != 0:
        sys.exit("`docker compose` does not answer; Harbor's docker environment needs the "
                 "Compose v2 plugin: bash environments/engine/install-compose.sh")
    return harbor


def harbor_env() -> dict[str, str]:
    """The environment for Harbor subprocesses: LiteLLM's model price list from its local
    copy (an offline machine would retry the download for every job)."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def sample(data: Path, n: int, seed: int = 0, where: str | None = None) -> list[TaskRow]:
    """``n`` tasks, as evenly spread over the ecosystems as they allow (seeded)."""
    by_eco: dict[str, list[TaskRow]] = defaultdict(list)
    for row in load_rows(data, where):
        by_eco[row.ecosystem].append(row)
    rng = random.Random(seed)
    for rows in by_eco.values():
        rng.shuffle(rows)
    picked: list[TaskRow] = []
    while len(picked) < n and any(by_eco.values()):
        for name in sorted(by_eco):
            if by_eco[name] and len(picked) < n:
                picked.append(by_eco[name].pop())
    return picked


def export(rows: list[TaskRow], out: Path, eco_dirs: list[Path], data: Path
           ) -> list[tuple[ExportTask, Path]]:
    """Export ``rows`` as Harbor folders under ``out``."""
    ecos = load_ecosystems(rows, eco_dirs, data)
    out.mkdir(parents=True, exist_ok=True)
    done = []
    for row in rows:
        task = ExportTask.of(row, ecos[row.ecosystem, row.ecosystem_version])
        done.append((task, write_folder(out, task.folder_name, render_folder(task,
                                                                              ExportOptions()))))
    return done


def folders_of(args: argparse.Namespace, tmp: str, n: int) -> Path:
    """``--folders`` when given, else ``n`` tasks of ``--data`` exported under ``tmp``."""
    if args.folders is not None:
        return Path(args.folders)
    folders = Path(tmp) / "tasks"
    export(sample(args.data, n), folders, args.ecosystem_dir, args.data)
    return folders


def harbor_job(harbor: str, tasks_dir: Path, agent: str, jobs: Path, name: str,
               concurrency: int, attempts: int = 1
               ) -> tuple[float, dict[str, float | None], str]:
    """``harbor run -a agent -k attempts`` over every folder in ``tasks_dir`` on the
    docker environment: (wall seconds, trial name -> reward or None for a trial that
    raised, the tail of Harbor's output).  With one attempt a trial is named by its
    folder."""
    argv = [harbor, "run", "-p", str(tasks_dir), "-a", agent, "-e", "docker",
            "-n", str(concurrency), "-k", str(attempts), "-o", str(jobs), "--job-name", name,
            "-y", "-q"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=harbor_env())
    seconds = time.perf_counter() - t0
    rewards: dict[str, float | None] = {}
    for result in sorted((jobs / name).glob("*/result.json")):
        trial = json.loads(result.read_text())
        folder = Path(trial["config"]["task"]["path"]).name
        trial_name = folder if attempts == 1 else result.parent.name
        verdict = trial.get("verifier_result") or {}
        reward = (verdict.get("rewards") or {}).get("reward")
        rewards[trial_name] = None if trial.get("exception_info") or reward is None else reward
    return seconds, rewards, (proc.stdout + proc.stderr)[-1500:]


def harbor_lint(harbor: str, folders: list[Path]) -> list[dict]:
    """``harbor lint --json`` over the folders: every finding of the default rules."""
    proc = subprocess.run([harbor, "lint", "--json", *map(str, folders)], capture_output=True,
                          text=True, env=harbor_env())
    try:
        return json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        sys.exit(f"harbor lint failed: {(proc.stdout + proc.stderr)[-800:]}")
