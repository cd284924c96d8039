"""`taskfactory run` end to end: real CLI, real Prefect server, real engine, real shards."""

import os
import signal
import subprocess
import sys
import time

import pytest


def count(cli, data, sql):
    proc = cli("query", sql, "--data", data, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[1:]


@pytest.mark.docker
def test_docker_run_accepts_most_candidates_and_is_reproducible(cli, tmp_path):
    first = cli("run", "--tasks", 20, "--seed", 1, "--backend", "docker", "--data", tmp_path / "a")
    assert first.returncode == 0, first.stderr
    n = int(count(cli, tmp_path / "a", "select count(*) from tasks")[0])
    assert n >= 18
    assert f"{n}/20 candidates accepted on the docker backend" in first.stdout
    assert count(cli, tmp_path / "a", "select count(*) from attempts") == ["20"]
    assert count(cli, tmp_path / "a", "select count(*) from tasks where gate.baseline_reward = 0 "
                                      "and gate.reference_reward = 1") == [str(n)]
    second = cli("run", "--tasks", 20, "--seed", 1, "--backend", "docker", "--data", tmp_path / "b")
    assert second.returncode == 0, second.stderr
    ids = "select task_id from tasks order by task_id"
    assert count(cli, tmp_path / "a", ids) == count(cli, tmp_path / "b", ids)
    for proc in (first, second):
        run_id = proc.stdout.split()[1].rstrip(":")
        assert _labelled(f"taskfactory.run={run_id}") == []


def test_auto_falls_back_to_local_visibly_when_no_daemon_answers(cli, tmp_path):
    proc = cli("run", "--tasks", 6, "--seed", 2, "--data", tmp_path / "d",
               env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert proc.returncode == 0, proc.stderr
    assert "using the local backend" in proc.stderr
    assert "on the local backend" in proc.stdout
    assert int(count(cli, tmp_path / "d", "select count(*) from tasks")[0]) >= 4


def _labelled(label):
    return subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"],
                          capture_output=True, text=True, check=True).stdout.split()


# Ctrl-C in a terminal reaches a process whose SIGINT is at its default.  A test suite
# started as a background job of a shell without job control (`make test &` in a script)
# has SIGINT ignored, and a child inherits that, so the CLI here first puts it back.
CLI_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
                   " runpy.run_module('flows.cli', run_name='__main__')")


@pytest.mark.docker
def test_ctrl_c_leaves_no_container_behind(prefect_api_url, tmp_path):
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url}
    proc = subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "run", "--tasks", "200",
                             "--backend", "docker", "--data", str(tmp_path / "x")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mine = f"taskfactory.owner_pid={proc.pid}"
    deadline = time.monotonic() + 120
    while not _labelled(mine) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _labelled(mine), "the run never started a sandbox"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # the CLI prints every thread's stack
        time.sleep(2)
        proc.kill()
        pytest.fail("the run did not exit within 120 s of SIGINT; its threads:\n"
                    + proc.communicate()[1][-8000:])
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert _labelled(mine) == []


@pytest.mark.docker
def test_a_run_requiring_observation_keeps_only_tasks_that_need_it(cli, tmp_path):
    """Goal-level tasks that name a looked-up file by description need observation and
    are kept; the spec style writes every argument, so the open-loop control solves each
    of its tasks and a run requiring observation keeps none."""
    def run(style: str):
        data = tmp_path / style
        proc = cli("run", "--tasks", 6, "--seed", 3, "--ecosystem", "files", "--backend",
                   "docker", "--require-observation", "--instruction-style", style,
                   "--data", data)
        assert proc.returncode == 0, proc.stderr
        assert count(cli, data, "select json_extract(settings_json, '$.require_observation') "
                                "from runs") == ["true"]
        return data

    goal = run("goal")
    kept = count(cli, goal, "select count(*), count(*) filter (where needs_observation and "
                            "gate.open_loop_reward < 1) from tasks")[0].split(",")
    assert int(kept[0]) >= 1 and kept[0] == kept[1], kept
    spec = run("spec")
    assert count(cli, spec, "select count(*) from tasks") == ["0"]
    rejected = count(cli, spec, "select count(*) from attempts where status = 'rejected' and "
                                "stage = 'validate' and reason = 'no_observation_needed'")
    assert int(rejected[0]) >= 5  # files candidates pass the other stages
