"""A real dataset to inject faults into, and how to compare datasets and folders.

One uninterrupted run (real CLI, real Prefect server, Docker sandboxes) is built per test
session; each test copies it.  Small commits (``--shard-rows 3``: about one commit per
accepted task) give many commit groups to break.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tasks.dataset.query import connect

SETTINGS = ["--tasks", 12, "--seed", 11, "--backend", "docker", "--ecosystem", "files,sql",
            "--workers", 2, "--shard-rows", 3]
TIMINGS = {"provenance", "created_at", "started_at", "finished_at", "flow_run_id",
           "duration_s", "sandbox_s", "execute_s", "gate_s", "render_s", "total_s"}
"""Columns (and trace keys) that differ between two runs of the same seed."""
KEYS = {"tasks": "task_id", "trajectories": "trajectory_id", "steps": "task_id, position",
        "attempts": "candidate_id", "runs": "run_id"}


def run_cli(api_url: str, *args: object, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PREFECT_API_URL": api_url}
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout)


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return _strip(json.loads(value))
        except ValueError:
            return value
    return value


def content(data: Path) -> dict[str, list]:
    """Every row of every table, timings and provenance left out, in key order."""
    con = connect(data, warn=_fail)
    try:
        out = {}
        for table, key in KEYS.items():
            cur = con.execute(f"select * from {table} order by {key}")
            names = [d[0] for d in cur.description]
            out[table] = [_strip(dict(zip(names, row, strict=True))) for row in cur.fetchall()]
        return out
    finally:
        con.close()


def _fail(message: str) -> None:
    raise AssertionError(f"a reader saw a bad dataset: {message}")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` with its bytes (to show that nothing was written)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The single ``taskfactory: error:`` line of a refused command (exit 2)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskfactory: error:"), proc.stderr
    return lines[0]
