"""SIGKILL a real run at random points, resume it, and compare with an uninterrupted run.

Every process is the real CLI (`taskfactory run`, then `run --resume`) against the test
Prefect server, on the local backend so the test stays fast.  After every kill the test
checks what a reader can see: only intact shards listed, no duplicate rows, every
candidate complete in every table, nothing committed lost.  Kill points (seeded random):
early (process start, planning, run registration), a random moment after the process
has committed something (execution, writing), and as soon as a shard file exists that
the manifest does not list yet (between a shard's rename and the manifest update).
Nothing a kill leaves is deleted by the next writer; ``taskfactory vacuum`` removes it.
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from tasks.dataset.query import connect
from tasks.dataset.store.checksums import shard_problem
from tasks.dataset.store.commits import unaccounted
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tasks.trajectories.render import ACTION_SPACES, SUPERVISIONS

TASKS = 16
SETTINGS = ["--tasks", TASKS, "--seed", 7, "--backend", "local", "--ecosystem", "files,sql",
            "--workers", 2, "--shard-rows", 1]  # one commit per candidate: many commit windows
KILLS = 10
CONTENT = {  # columns that must match an uninterrupted run (timings and provenance differ)
    "attempts": "candidate_id, index, ecosystem, seed, shape, depth, fingerprint, status, "
                "stage, reason, task_id, repairs",
    "tasks": "task_id, candidate_id, ecosystem, seed, shape, depth, n_steps, fingerprint, "
             "tools, instruction, answer, solution_sh, verifier_py, checks_json, graph_json, "
             "env_digest, gate",
    "trajectories": "trajectory_id, task_id, messages, tools, supervision, reward, n_turns",
    "steps": "task_id, position, step_id, tool, args_json, command, exit_code, stdout, stderr, "
             "output_type",
}
KEYS = {"attempts": "candidate_id", "tasks": "task_id", "trajectories": "trajectory_id",
        "steps": "task_id, position"}


def rows(data: Path, table: str) -> list[tuple]:
    con = connect(data, warn=_fail)
    try:
        return con.execute(f"select {CONTENT[table]} from {table} order by all").fetchall()
    finally:
        con.close()


def _fail(message: str) -> None:
    raise AssertionError(f"a reader saw a bad shard: {message}")


def check_visible_state(data: Path) -> int:
    """Assert what any reader sees is whole and consistent; returns committed attempts."""
    if not (data / MANIFEST).exists():
        return 0
    manifest = load_manifest(data)
    for entry in manifest.shards:
        assert shard_problem(data, entry) is None, entry.path
        assert pq.read_table(data / entry.path).num_rows == entry.rows
    con = connect(data, warn=_fail)
    try:
        for table, key in KEYS.items():
            n, distinct = con.execute(f"select count(*), count(distinct ({key})) "
                                      f"from {table}").fetchone()
            assert n == distinct, f"duplicate rows in {table}"
        incomplete = con.execute(f"""
            select a.candidate_id from attempts a
            left join tasks t using (task_id)
            left join (select task_id, count(*) as n from steps group by 1) s using (task_id)
            left join (select task_id, count(*) as n from trajectories group by 1) j
                using (task_id)
            where a.status = 'accepted' and (t.task_id is null or s.n is distinct from t.n_steps
                  or j.n is distinct from {len(ACTION_SPACES) * len(SUPERVISIONS)})
            """).fetchall()
        assert incomplete == [], f"candidates committed without all their rows: {incomplete}"
        return con.execute("select count(*) from attempts").fetchone()[0]
    finally:
        con.close()


def listed_shards(data: Path) -> int:
    try:
        return len(load_manifest(data).shards)
    except Exception:  # not there yet
        return 0


def uncommitted_files(data: Path) -> set[str]:
    """Shard and temp files on disk that the manifest does not list."""
    on_disk = [p for p in data.glob("*/*") if p.name.endswith(".tmp")
               or (p.suffix == ".parquet" and p.name.startswith("part-"))]
    try:
        listed = {s.path for s in load_manifest(data).shards}
    except Exception:  # no manifest yet, or caught mid-replace
        listed = set()
    return {str(p.relative_to(data)) for p in on_disk} - listed


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(
        cli, prefect_api_url, tmp_path):
    t0 = time.monotonic()
    ref = cli("run", *SETTINGS, "--data", tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    ref_seconds = time.monotonic() - t0

    data = tmp_path / "killed"
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url}
    rng = random.Random(20261201)
    points, committed = [], 0
    for i in range(KILLS):
        started = (data / MANIFEST).exists() and load_manifest(data).runs
        args = ["run", "--resume"] if started else ["run", *SETTINGS]
        proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *map(str, args), "--data",
                                 str(data)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        before, left_before = listed_shards(data), uncommitted_files(data)
        deadline = time.monotonic() + 180
        kind = ["early", "running", "in-commit", "running"][i % 4]
        if kind == "early":  # imports, Prefect connection, planning, run registration
            time.sleep(rng.uniform(0.2, min(4.0, ref_seconds)))
        elif kind == "in-commit":  # a new shard on disk that the manifest does not list yet
            while proc.poll() is None and time.monotonic() < deadline \
                    and not uncommitted_files(data) - left_before:
                pass
        else:  # a random moment after this process has committed something
            while proc.poll() is None and time.monotonic() < deadline \
                    and listed_shards(data) == before:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.5))
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before kill {i + 1}: "
                                 f"{proc.communicate()[1][-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        now = check_visible_state(data)
        assert now >= committed, "committed attempts were lost"
        points.append((i + 1, "resume" if started else "new", kind, committed, now,
                       len(uncommitted_files(data))))
        committed = now

    final = cli("run", "--resume", "--data", data)
    assert final.returncode == 0, final.stderr
    assert "resumed" in final.stdout
    print("\nkill  process  point      attempts before  after  uncommitted files left")
    for p in points:
        print(f"{p[0]:>4}  {p[1]:<7}  {p[2]:<9}  {p[3]:>15}  {p[4]:>5}  {p[5]:>6}")
    assert len(points) == KILLS >= 10
    assert {p[2] for p in points} == {"early", "running", "in-commit"}
    assert check_visible_state(data) == TASKS
    # what the kills left unlisted is kept, known to the manifest, and only vacuum deletes it
    assert unaccounted(data, load_manifest(data)) == []
    vacuum = cli("vacuum", "--older-than", "0s", "--data", data)
    assert vacuum.returncode == 0, vacuum.stderr
    assert uncommitted_files(data) == set() and load_manifest(data).abandoned == []
    for table in CONTENT:
        assert rows(data, table) == rows(tmp_path / "ref", table), f"{table} differs"
    con = connect(data)
    (resumes, status, candidates), = con.execute(
        "select resumes, status, candidates from runs").fetchall()
    run_ids = con.execute("select distinct run_id from attempts").fetchall()
    flow_runs = con.execute("select count(distinct provenance.flow_run_id) from attempts"
                            ).fetchone()[0]
    con.close()
    assert (status, candidates) == ("complete", TASKS) and len(run_ids) == 1
    # a resumed process counts once it has registered (a kill before that leaves no trace)
    assert 1 <= resumes <= sum(p[1] == "resume" for p in points) + 1
    assert flow_runs >= 2  # rows carry the flow run that wrote them
