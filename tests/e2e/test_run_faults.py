"""Faults at run time, end to end: the real CLI against a real Prefect server and a real
Docker engine, compared with an uninterrupted run of the same seed.

The engine-outage tests stop and start a Docker engine of their own
(tests/support/private_engine.py), never the one the rest of the suite uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.query import connect
from flows.runs import SETTLED_ATTEMPTS
from tasks.manifest import MANIFEST, load_manifest
from tests.support.private_engine import private_engine

SETTINGS = ["--tasks", 16, "--seed", 3, "--backend", "docker", "--ecosystem", "files,sql",
            "--workers", 2, "--shard-rows", 1]
OUTCOME = "candidate_id, status, stage, reason, task_id"


@pytest.fixture(scope="module")
def engine():
    with private_engine() as eng:
        yield eng


@pytest.fixture(scope="module")
def reference(engine, prefect_api_url, tmp_path_factory) -> Path:
    """An uninterrupted run on the private engine."""
    data = tmp_path_factory.mktemp("faults") / "ref"
    done = subprocess.run(_cli("run", *SETTINGS, "--data", data), capture_output=True,
                          text=True, env=_env(engine, prefect_api_url), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return data


def _cli(*args: object) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *map(str, args)]


def _env(engine, api_url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PREFECT_API_URL": api_url, "DOCKER_HOST": engine.host, **extra}


def settled(data: Path, what: str = OUTCOME) -> list[tuple]:
    con = connect(data)
    try:
        return con.execute(f"select {what} from {SETTLED_ATTEMPTS} order by all").fetchall()
    finally:
        con.close()


def committed_attempts(data: Path) -> int:
    try:
        return sum(s.rows for s in load_manifest(data).shards if s.table == "attempts")
    except Exception:  # no manifest yet
        return 0


def start_and_stop_the_engine_mid_run(engine, api_url: str, data: Path, outage_s: float,
                                      until_exit: bool = False, **env: str
                                      ) -> subprocess.CompletedProcess:
    """Start a run; once it committed 4 attempts, stop the engine for ``outage_s``
    (or, ``until_exit``, until the run has ended); returns the finished run."""
    proc = subprocess.Popen(_cli("run", *SETTINGS, "--data", data), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(engine, api_url, **env))
    deadline = time.monotonic() + 600
    while committed_attempts(data) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the engine was stopped"
    engine.stop()
    if until_exit:
        out, err = proc.communicate(timeout=900)
        engine.start()
    else:
        time.sleep(outage_s)
        engine.start()
        out, err = proc.communicate(timeout=900)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_engine_stopped_for_2_s_mid_run_loses_no_candidate(engine, prefect_api_url,
                                                           reference, tmp_path):
    data = tmp_path / "outage"
    run = start_and_stop_the_engine_mid_run(engine, prefect_api_url, data, outage_s=2)
    assert run.returncode in (0, 75), run.stderr[-3000:]
    if run.returncode == 75:  # some candidates outlasted their retries: one resume
        resumed = subprocess.run(_cli("run", "--resume", "--data", data), text=True,
                                 capture_output=True, env=_env(engine, prefect_api_url),
                                 timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    outcomes = settled(data)
    assert {o[1] for o in outcomes} <= {"accepted", "rejected"}
    assert not [o for o in outcomes if o[2] == "sandbox"], "an engine error became a rejection"
    assert outcomes == settled(reference)
    task_ids = "select task_id from tasks order by 1"
    assert _rows(data, task_ids) == _rows(reference, task_ids)


def test_engine_away_past_the_wait_gives_errored_candidates_that_resume_runs(
        engine, prefect_api_url, reference, tmp_path):
    data = tmp_path / "away"
    run = start_and_stop_the_engine_mid_run(engine, prefect_api_url, data, outage_s=0,
                                            until_exit=True, TASKFACTORY_ENGINE_WAIT_S="2")
    assert run.returncode == 75, run.stderr[-3000:]
    assert "errored:" in run.stdout and "--resume" in run.stdout
    errored = [o for o in settled(data) if o[1] == "errored"]
    assert errored and {o[3] for o in errored} == {"engine"}
    assert not [o for o in settled(data) if o[2] == "sandbox" and o[1] == "rejected"]
    assert load_manifest(data).runs[next(iter(load_manifest(data).runs))].status == "running"
    stats = subprocess.run(_cli("stats", "--data", data), text=True, capture_output=True)
    assert "## Errored" in stats.stdout, stats.stderr
    resumed = subprocess.run(_cli("run", "--resume", "--data", data), text=True,
                             capture_output=True, env=_env(engine, prefect_api_url),
                             timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert settled(data) == settled(reference)
    # the errored attempts stay in the history, superseded
    con = connect(data)
    history = con.execute("select count(*) from attempts where status = 'errored'").fetchone()
    con.close()
    assert history[0] == len(errored)
    assert (data / MANIFEST).exists()


def _rows(data: Path, sql: str) -> list[tuple]:
    con = connect(data)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
