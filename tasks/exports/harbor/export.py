"""One accepted task as a Harbor task folder: rendered as bytes, then written in place.

Layout (Harbor's ``TaskPaths``)::

    <ecosystem>-<task_id>/
      task.toml            schema version, name, timeouts, resources, [metadata.taskfactory]
      instruction.md       the task's instruction, as the factory rendered it
      environment/         Dockerfile + build context (see tasks/exports/harbor/environment.py)
      solution/solve.sh    the reference solution (``TaskRow.solution_sh``)
      tests/test.sh        runs tests/verify.py on /workspace, writes /logs/verifier/reward.*
      tests/verify.py      the standalone verifier (``TaskRow.verifier_py``, stdlib only)

A reconstruct task's folder has the same files: ``environment/`` makes the agent's
workspace, the public examples (made afresh by running the reference program on each
public case in the task's environment, so exporting one needs a Docker engine);
``solution/solve.sh`` installs the reference program at ``solution/run.sh``; the hidden
cases are only in ``tests/verify.py``, which runs the program on a fresh copy of each and
writes ``reward.json`` with the fraction of cases and checks passed.  Its verifier timeout
covers the program on every hidden case.

``task.toml`` follows Harbor's ``TaskConfig``: the agent runs as the sandbox user
(uid 1000, like the factory's tools), the verifier as root (Harbor's default user); the
environment gets the factory's CPU quota; ``[metadata.taskfactory]`` carries the task's
provenance and every ``gate.*`` result.

:func:`render_folder` raises :class:`tasks.exports.harbor.HarborError` for a task that cannot be
exported as it is (its ecosystem changed, its examples cannot be made again or would
show a hidden case); :func:`write_folder` writes one folder under a hidden temporary name
and renames it into place, never outside ``--out`` and never over a folder an export did
not write.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from environments.docker.config import DockerConfig
from tasks.dataset.store.paths import check_name, check_relative, install_folder, writing
from tasks.exports.harbor import HarborError
from tasks.exports.harbor.environment import EXEC_MODE, FILE_MODE, Files, environment_files
from tasks.exports.harbor.source import ExportTask, exported_task_id
from tasks.exports.harbor.toml import dumps
from tasks.reconstruct.cases import Case, reconstruct_verifier_timeout
from tasks.reconstruct.examples import example_files, hidden_leaks

HARBOR_SCHEMA_VERSION = "1.4"
"""``TaskConfig.schema_version`` of the Harbor release the folders are checked against."""
TESTS_DIR, SOLUTION_DIR, LOGS_DIR = "/tests", "/solution", "/logs/verifier"
VERIFIER_USER = "root"

Network = Literal["public", "no-network"]


@dataclass(frozen=True)
class ExportOptions:
    """What ``task.toml`` declares beyond the task itself."""

    network: Network = "public"
    agent_timeout_s: float = 600.0
    verifier_timeout_s: float = 120.0
    build_timeout_s: float = 900.0
    memory_mb: int = 2048
    """Room for an agent's own processes too (the factory's tools ran within 512 MB)."""


def test_sh(task_id: str, reconstruct: bool = False) -> str:
    """``tests/test.sh``: the verifier, as root, on the final workspace.  It stops every
    process of the agent's user before it reads anything, takes ``/logs/verifier`` and
    writes the reward last (``tasks.verify.seal``); a verifier that dies without a reward
    leaves reward 0, written afresh (a file the agent planted there is never kept).  A
    reconstruct task's verifier runs the program the workspace holds on each hidden case
    it carries, as the agent's user."""
    config = DockerConfig()
    workdir = config.workdir
    what = ([f"# library only; installs nothing, needs no network) on the final state of "
             f"{workdir}.",
             f"# Writes {LOGS_DIR}/reward.txt (1 or 0), reward.json (reward, checks_passed,",
             "# checks_total) and details.json (one entry per check)."]
            if not reconstruct else
            ["# library only; installs nothing, needs no network): it runs the program in "
             f"{workdir} on",
             "# a fresh copy of each hidden case it carries, as the agent's user.  Writes "
             f"{LOGS_DIR}/reward.txt",
             "# (1 or 0), reward.json (reward, cases and checks passed, their fractions, each",
             "# level) and details.json (one entry per check of each case)."])
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# Verifier of taskfactory task {task_id}: runs tests/verify.py (Python standard",
        *what,
        f"# Runs as root; the agent ran as {config.user}: the verifier first stops every "
        "process of that",
        "# user and takes the logs folder, so nothing the agent left can write the reward.",
        "set -u",
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "cd /",
        f"chmod 0700 {TESTS_DIR}",
        f"python3 -I -S {TESTS_DIR}/verify.py --root {workdir} --logs {LOGS_DIR} "
        f"--agent-user {config.user}",
        "status=$?",
        'if [ "$status" -gt 1 ] || [ ! -f ' + f"{LOGS_DIR}/reward.json ]; then",
        f"    rm -rf -- {LOGS_DIR}/reward.txt {LOGS_DIR}/reward.json",
        f"    (set -C; echo 0 > {LOGS_DIR}/reward.txt)",
        "fi",
        'exit "$status"',
    ]) + "\n"


def _metadata(task: ExportTask) -> dict[str, object]:
    row = task.row
    gate = row.gate.model_dump()
    return {
        "task_id": row.task_id, "run_id": row.run_id, "candidate_id": row.candidate_id,
        "ecosystem": row.ecosystem, "ecosystem_version": row.ecosystem_version,
        "seed": row.seed, "shape": row.shape, "depth": row.depth, "n_steps": row.n_steps,
        "tools": row.tools, "fingerprint": row.fingerprint, "env_digest": row.env_digest,
        "initial_state_sha256": row.initial_state_sha256, "base_image": row.image,
        "backend": row.backend, "generator_version": row.generator_version,
        "created_at": row.created_at.isoformat(), "answer_file": task.eco.spec.answer_file,
        "gate": {**gate, "passed": row.gate.passed},
    }


def task_config(task: ExportTask, options: ExportOptions) -> dict[str, object]:
    """``task.toml`` as data (Harbor ``TaskConfig`` fields)."""
    row, eco, config = task.row, task.eco, DockerConfig()
    environment: dict[str, object] = {
        "build_timeout_sec": options.build_timeout_s, "cpus": config.cpus,
        "memory_mb": options.memory_mb, "workdir": config.workdir,
        "network_mode": options.network,
    }
    if eco.spec.service:
        svc = eco.spec.service
        environment["healthcheck"] = {
            "command": svc.ready, "interval_sec": 1.0, "timeout_sec": 10.0,
            "start_period_sec": svc.ready_timeout_s, "start_interval_sec": 0.5, "retries": 3}
    return {
        "schema_version": HARBOR_SCHEMA_VERSION,
        "task": {"name": task.harbor_name,
                 "description": f"{eco.name}: a {row.shape} workflow of {row.n_steps} "
                                f"tool call(s) ({', '.join(row.tools)})",
                 "keywords": ["taskfactory", eco.name, row.shape]},
        "metadata": {"category": eco.name, "difficulty": row.tier or "medium",
                     "tags": sorted({eco.name, row.shape, *row.tools}),
                     "taskfactory": _metadata(task)},
        "verifier": {"timeout_sec": options.verifier_timeout_s, "user": VERIFIER_USER},
        "agent": {"timeout_sec": options.agent_timeout_s, "user": config.user},
        "environment": environment,
    }


def render_folder(task: ExportTask, options: ExportOptions | None = None) -> Files:
    """Every file of the task's Harbor folder: relative path -> (bytes, mode).  A
    reconstruct task's public examples are made afresh in its environment, which needs a
    Docker engine (:func:`reconstruct_cases`)."""
    options = options or ExportOptions()
    row = task.row
    cases = reconstruct_cases(task) if task.reconstruct else None
    config = task_config(task, options)
    if cases is not None:  # the verifier runs the program on every hidden case
        verifier = config["verifier"]
        assert isinstance(verifier, dict)
        verifier["timeout_sec"] = max(options.verifier_timeout_s,
                                      reconstruct_verifier_timeout(cases))
    files: Files = {
        "task.toml": (dumps(config).encode(), FILE_MODE),
        "instruction.md": (row.instruction.rstrip("\n").encode() + b"\n", FILE_MODE),
        "solution/solve.sh": (row.solution_sh.encode(), EXEC_MODE),
        "tests/test.sh": (test_sh(row.task_id, task.reconstruct).encode(), EXEC_MODE),
        "tests/verify.py": (row.verifier_py.encode(), FILE_MODE),
    }
    env = environment_files(row, task.eco, task.trace.environment, cases)
    files.update({f"environment/{path}": entry for path, entry in env.items()})
    return files


def reconstruct_cases(task: ExportTask) -> list[Case]:
    """A reconstruct task's cases, its public examples made afresh
    (:func:`tasks.exports.harbor.rebuild.rebuilt_cases`); HarborError when no engine answers, when
    they
    are not the ones the task was gated with, or when the examples hold a byte of a hidden
    case (:func:`tasks.reconstruct.examples.hidden_leaks`)."""
    from environments.sandbox import SandboxError
    from tasks.core.failures import StageFailure
    from tasks.exports.harbor.rebuild import fresh_environments, rebuilt_cases

    row = task.row
    try:
        with fresh_environments(task, f"export-{os.getpid()}") as open_sandbox, \
                open_sandbox(()) as sandbox:
            cases = rebuilt_cases(task, sandbox)
    except SandboxError as exc:
        raise HarborError(f"task {row.task_id} is a reconstruct task, whose examples are made "
                          f"in a sandbox, and none opens ({exc}); start a Docker engine with "
                          "`make engine`, or leave reconstruct tasks out with --where "
                          "\"kind <> 'reconstruct'\"") from None
    except StageFailure as exc:
        raise HarborError(f"task {row.task_id}: its public examples cannot be made again "
                          f"({exc.reason}: {exc.detail}); export it with the taskfactory and "
                          "ecosystem that made it") from None
    leaks = hidden_leaks(example_files(cases), cases)
    if leaks:
        raise HarborError(f"task {row.task_id}: its examples hold hidden case content "
                          f"({', '.join(leaks)}); it should not have been accepted")
    return cases


def check_target(out: Path, name: str) -> Path:
    """``out / name`` when a task folder may be written there: ``name`` is a plain name,
    and nothing is there or a folder an export wrote; HarborError otherwise."""
    try:
        check_name(name, "task folder name")
    except ValueError as exc:
        raise HarborError(f"{exc}; this task cannot be exported") from None
    final = out / name
    if os.path.lexists(final) and exported_task_id(final) is None:
        raise HarborError(f"{final} exists and is not a task folder taskfactory exported (no "
                          "task.toml naming its task); move it away or choose another --out")
    return final


def write_folder(out: Path, name: str, files: Files) -> Path:
    """Write one task folder under a fresh hidden temporary name in ``out`` (created if
    missing), then rename it to ``name``.  Nothing is written outside ``out``: ``name``
    must be a plain name and every file path relative (HarborError otherwise).  An
    existing ``out / name`` is replaced only when it is a folder an export wrote, its
    ``task.toml`` naming the task (:func:`tasks.exports.harbor.source.exported_task_id`);
    anything else there is HarborError, untouched.  Modes are set explicitly: the image
    build copies them."""
    try:
        for rel in files:
            check_relative(rel, "task file")
    except ValueError as exc:
        raise HarborError(f"{exc}; this task cannot be exported") from None
    final = check_target(out, name)
    with writing(out):
        out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out, prefix=f".{name}.tmp-"))
    try:
        for rel, (data, mode) in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(mode)
        for folder in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            folder.chmod(0o755)
        install_folder(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
