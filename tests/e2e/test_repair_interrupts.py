"""`taskfactory repair` ends with everything it started: Ctrl-C to the terminal's process
group or SIGTERM stops the re-run with one line (no traceback), leaves the complete run
``complete`` with its lost candidates pending, and stops the temporary Prefect server
and the sandboxes; SIGKILL takes the server along at once and leaves the sandboxes to the
next repair, which reaps them and finishes.  Real CLI, real Prefect server of the
command's own, Docker sandboxes, a copy of the session's fault dataset."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from tasks.dataset.store.manifest import load_manifest
from tests.support.fault_dataset import content, run_cli
from tests.support.interrupts import CLI_WITH_CTRL_C, interrupt

pytestmark = pytest.mark.docker


@pytest.fixture
def data(fault_dataset, tmp_path):
    """The fault dataset with one corrupt attempts shard: repair re-runs its candidates."""
    shutil.copytree(fault_dataset, tmp_path / "data")
    target = tmp_path / "data" / load_manifest(tmp_path / "data").listed("attempts")[0].path
    blob = bytearray(target.read_bytes())
    blob[len(blob) // 2] ^= 1
    target.write_bytes(bytes(blob))
    return tmp_path / "data"


def start_repair(data: Path, tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """A repair with no PREFECT_API_URL, in a session of its own like a terminal's job,
    once its re-run has sandboxes running; the pids of its Prefect server."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1")
    proc = subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "repair", "--data",
                             str(data)], env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 300
    while not sandboxes(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    assert sandboxes(proc.pid), "the re-run started no sandbox within 300 s"
    return proc, [pid for pid in descendants(proc.pid) if "uvicorn" in cmdline(pid)]


def sandboxes(owner: int) -> list[str]:
    client = docker.from_env()
    try:
        return [c["Id"] for c in client.api.containers(
            all=True, filters={"label": f"taskfactory.owner_pid={owner}"})]
    finally:
        client.close()


def descendants(pid: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1]
                                           .split()[1])
        except (ValueError, OSError):
            continue
    found, todo = [], [pid]
    while todo:
        pid = todo.pop()
        kids = [child for child, parent in parents.items() if parent == pid]
        found += kids
        todo += kids
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(Path(f"/proc/{p}").exists() for p in pids)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_repair_stops_all_it_started_and_keeps_the_run_complete(
        data, tmp_path, prefect_api_url, fault_dataset, signum):
    proc, servers = start_repair(data, tmp_path)
    assert servers, "repair started no Prefect server of its own"
    err = interrupt(proc, signum, 120)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "| ERROR" not in err, err[-3000:]
    lines = err.strip().splitlines()  # the server notice and warnings (a reap) may come first
    assert [line for line in lines if line.startswith("interrupted")] == lines[-1:], err
    assert gone(servers, 15), "the temporary Prefect server was left behind"
    assert sandboxes(proc.pid) == []
    manifest = load_manifest(data)
    assert [e.status for e in manifest.runs.values()] == ["complete"]
    assert manifest.pending  # the next repair finishes the re-run
    finish = run_cli(prefect_api_url, "repair", "--data", data)
    assert finish.returncode == 0, finish.stdout + finish.stderr
    assert content(data) == content(fault_dataset)


def test_a_killed_repair_takes_its_server_along_and_the_next_one_reaps_and_finishes(
        data, tmp_path, prefect_api_url, fault_dataset):
    proc, servers = start_repair(data, tmp_path)
    assert servers, "repair started no Prefect server of its own"
    proc.kill()  # the parent only: nothing can run in it any more
    proc.wait()
    assert gone(servers, 15), "the temporary Prefect server outlived its repair"
    finish = run_cli(prefect_api_url, "repair", "--data", data)
    assert finish.returncode == 0, finish.stdout + finish.stderr
    assert sandboxes(proc.pid) == []  # reaped when the next repair's run started
    assert content(data) == content(fault_dataset)
    assert [e.status for e in load_manifest(data).runs.values()] == ["complete"]
