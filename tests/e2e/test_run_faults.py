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

from environments.ecosystems import load_ecosystem
from tasks.dataset.query import connect
from tasks.dataset.runs import SETTLED_ATTEMPTS
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tasks.plan.planner import plan_candidates
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


@pytest.mark.docker
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


@pytest.mark.docker
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


# ---- user code that hangs or raises ---------------------------------------------------

UNRULY = "tests/fixtures/ecosystems/unruly"


def test_a_hanging_seed_ends_its_candidate_with_its_own_reason_and_the_run_goes_on(
        cli, tmp_path):
    data = tmp_path / "d"
    planned, _ = plan_candidates(load_ecosystem(UNRULY), 12, 8)
    kinds = [c.seed % 5 for c in planned]  # 1: the seed hangs; 2: it raises
    assert kinds.count(1) and kinds.count(2) and len(kinds) > kinds.count(1) + kinds.count(2)
    run = cli("run", "--tasks", 12, "--seed", 8, "--backend", "local", "--ecosystem", UNRULY,
              "--workers", 3, "--data", data, env={"TASKFACTORY_SEED_TIMEOUT_S": "3"})
    assert run.returncode == 0, run.stderr[-3000:]
    rows = _rows(data, "select stage, reason, detail from attempts order by index")
    reasons = [(stage, reason) for stage, reason, _ in rows]
    assert len(rows) == 12
    assert reasons.count(("realize", "seed_timeout")) == kinds.count(1)
    assert reasons.count(("realize", "seed_error")) == kinds.count(2)
    assert ("accepted", "accepted") in reasons and ("sandbox", "sandbox") not in reasons
    details = {reason: detail for _, reason, detail in rows}
    assert "did not return within 3 s" in details["seed_timeout"]
    assert "ValueError: no notes for seed" in details["seed_error"]
    assert "(seed.py, line" in details["seed_error"]


def _unruly_copy(tmp_path: Path, seed_py: str) -> Path:
    import shutil

    eco = tmp_path / "eco"
    shutil.copytree(UNRULY, eco)
    (eco / "seed.py").write_text(seed_py)
    return eco


def _nothing_written(proc: subprocess.CompletedProcess, data: Path, needle: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("taskfactory: error:") and needle in lines[-1], lines[-1]
    assert "Traceback" not in proc.stderr
    assert not data.exists(), "the dataset folder was created"


@pytest.mark.parametrize("layout,needle", [
    ("raise KeyError('warehouse')", "planning failed: seed.layout("),
    ("import time; time.sleep(3600)", "did not return within 3 s"),
])
def test_a_seed_layout_that_fails_while_planning_is_one_line_and_writes_nothing(
        cli, tmp_path, layout, needle):
    eco = _unruly_copy(tmp_path, f"def layout(seed):\n    {layout}\n\n\n"
                                 "def generate(seed):\n    return {}\n")
    data = tmp_path / "d"
    before = sorted(tmp_path.iterdir())
    proc = cli("run", "--tasks", 4, "--backend", "local", "--ecosystem", eco, "--data", data,
               env={"TASKFACTORY_SEED_TIMEOUT_S": "3"})
    _nothing_written(proc, data, needle)
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("change,needle", [
    ("import", "seed.py: raises on import: RuntimeError: no database (seed.py, line 1)"),
    ("type", "params.0 (note).type': nothing binds type 'file.nosuch'"),
])
def test_bad_ecosystems_are_one_line_before_anything_runs(tmp_path, change, needle):
    eco = _unruly_copy(tmp_path, (Path(UNRULY) / "seed.py").read_text())
    if change == "import":
        (eco / "seed.py").write_text("raise RuntimeError('no database')\n")
    else:
        spec = eco / "ecosystem.yaml"
        spec.write_text(spec.read_text().replace("type: file.text.note, description: The "
                                                 "note to sort.", "type: file.nosuch, "
                                                 "description: x."))
    data = tmp_path / "d"
    t0 = time.monotonic()
    proc = subprocess.run(_cli("run", "--backend", "local", "--ecosystem", eco, "--data", data),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    _nothing_written(proc, data, needle)
    assert proc.stderr.count("\n") == 1 and "prefect" not in proc.stderr
    assert time.monotonic() - t0 < 60  # decided before Prefect: no server was needed


# ---- Ctrl-C in a terminal ---------------------------------------------------------------

def test_ctrl_c_to_the_process_group_stops_the_run_and_its_temporary_server(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it, with the temporary
    Prefect server of a run that has no PREFECT_API_URL."""
    import signal

    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1")
    data = tmp_path / "d"
    proc = subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "run", "--tasks", "60",
                             "--backend", "local", "--ecosystem", "files", "--workers", "2",
                             "--shard-rows", "1", "--data", str(data)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while committed_attempts(data) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # one commit per candidate: the run is in its loop
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    servers = _children(proc.pid, "uvicorn")
    assert len(servers) == 1, "the run has no temporary server of its own"
    assert os.getsid(servers[0]) != os.getsid(proc.pid)  # not in the terminal's session
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)  # a correctness bound, not a speed claim
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not stop within 30 s of SIGINT: {proc.communicate()[1]}")
    assert proc.returncode == 130, err[-3000:]
    assert f"taskfactory run --resume --data {data}" in err
    assert "Traceback" not in err
    assert time.monotonic() - t0 < 30
    deadline = time.monotonic() + 10
    while Path(f"/proc/{servers[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{servers[0]}").exists(), "the temporary server was left behind"


CLI_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
                   " runpy.run_module('flows.cli', run_name='__main__')")
"""A terminal's Ctrl-C reaches a process whose SIGINT is at its default; a suite started
from a script without job control inherits SIGINT ignored, so the CLI puts it back."""


def _children(pid: int, name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat[1]) == pid and name in cmdline:
            found.append(int(entry.name))
    return found
