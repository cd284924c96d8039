"""`taskfactory query` is bounded: spill files in a scratch folder that goes away (never
``./.tmp`` where the command was typed), a memory limit and a ``--timeout``, Ctrl-C and
SIGTERM stop DuckDB at once, results stream, and JSON output is JSON.  Real DuckDB over
the real v1 dataset, the CLI as a subprocess."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.interrupts import CLI_WITH_CTRL_C

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"
ROOT = Path(__file__).parents[2]
SORT = "select i, md5(i::varchar) h from range({n}) t(i) order by h"
"""A sort DuckDB must finish before the first row: spills past a small memory limit."""


@pytest.fixture
def data(tmp_path):
    shutil.copytree(V1, tmp_path / "data")
    return tmp_path / "data"


def start(data: Path, *args: str, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(cwd.parent / "tmp")}
    Path(env["TMPDIR"]).mkdir(exist_ok=True)
    # SIGINT at its default, as a terminal's job has it (a suite started without job
    # control would hand it down ignored)
    return subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "query", *args, "--data",
                             str(data)], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def scratch_of(pid: int, tmp: Path) -> list[Path]:
    return sorted(tmp.glob(f"taskfactory-duckdb-{pid}-*"))


def test_spill_files_stay_in_a_scratch_folder_that_a_kill_does_not_leave_behind(data,
                                                                              tmp_path):
    here = tmp_path / "here"
    here.mkdir()
    tmp = tmp_path / "tmp"
    proc = start(data, SORT.format(n=20_000_000), "--format", "csv", "--memory-limit",
                 "100MB", cwd=here)
    deadline = time.monotonic() + 120
    while not any(f for d in scratch_of(proc.pid, tmp) for f in d.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, "nothing spilled"
        time.sleep(0.05)
    proc.kill()  # SIGKILL: the query cannot remove its scratch folder itself
    proc.wait()
    assert list(here.iterdir()) == []  # no ./.tmp where the command was typed
    assert scratch_of(proc.pid, tmp)  # what the killed query spilled, in its folder
    after = start(data, "select 1", cwd=here)
    assert after.wait(60) == 0
    assert scratch_of(proc.pid, tmp) == [] and scratch_of(after.pid, tmp) == []
    assert list(here.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_duckdb_mid_sort_with_one_line_and_exit_130(data, tmp_path,
                                                                     signum):
    """The sort takes minutes and does not look at Python's signals; the interrupt ends
    it (the 30 s bound is the test's patience, not a measurement)."""
    here = tmp_path / "here"
    here.mkdir()
    proc = start(data, SORT.format(n=300_000_000), "--format", "csv", cwd=here)
    time.sleep(4)  # inside the sort
    assert proc.poll() is None
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.splitlines() == ["taskfactory: interrupted; nothing was left running"]
    assert scratch_of(proc.pid, tmp_path / "tmp") == []


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd or ROOT)


def test_a_query_past_its_timeout_is_stopped_with_one_line(data):
    proc = cli("query", "select count(*) from range(1000000000000)", "--timeout", "1",
               "--data", str(data))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "taskfactory: error: query stopped at --timeout 1 s; narrow it, or give it more time "
        "(--timeout 0: no limit)"]


@pytest.mark.parametrize("args,line", [
    (["UPDATE EXTENSIONS"], "query: only a single SELECT statement is accepted (got UNKNOWN)"),
    (["select 1", "--memory-limit", "lots"], "--memory-limit: expected a size like 512MB"),
    (["select 1", "--timeout", "-1"], "--timeout: Input should be greater than or equal to 0"),
    (["select 1", "--timeout", "nan"], "--timeout: Input should be a finite number"),
    (["select count(distinct i::varchar) from range(50000000) t(i)", "--memory-limit", "10MB"],
     "query failed: Out of Memory Error"),
    (["select repeat('x', 100000000) from range(30)"],  # one batch: 3 GB of text
     "query failed: Invalid Input Error: Arrow Appender"),
])
def test_bad_query_input_is_one_line(data, args, line):
    proc = cli("query", *args, "--data", str(data))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"taskfactory: error: {line}"), lines


def test_csv_streams_a_long_result_in_bounded_memory(data):
    """5 million rows: the process peaks where a one-row query does (materialising the
    rows as Python tuples used to add ~500 MB)."""
    def peak_mb(sql: str) -> float:
        code = ("import resource, sys; from flows.cli import main; "
                f"code = main(['query', {sql!r}, '--format', 'csv', '--data', {str(data)!r}]); "
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
                "sys.exit(code)")
        proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stderr.split()[-1]) / 1024

    assert peak_mb("select * from range(5000000)") - peak_mb("select 1") < 150


def test_json_lines_are_json_with_every_column(data):
    proc = cli("query", "select 1 as a, 2 as a, 3 as a_1, 'nan'::double as n, "
               "'-inf'::double as i, [1.5, 'inf'::double] as l, {'x': 'nan'::double} as s",
               "--format", "json", "--data", str(data))
    assert proc.returncode == 0, proc.stderr

    def no_constants(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    rows = [json.loads(line, parse_constant=no_constants) for line in proc.stdout.splitlines()]
    assert rows == [{"a": 1, "a_1": 2, "a_1_1": 3, "n": None, "i": None, "l": [1.5, None],
                     "s": {"x": None}}]


def test_readers_spill_into_the_scratch_folder_not_the_working_directory(data, tmp_path):
    """Every reader's connection (stats, export, card too) gets the scratch folder."""
    from tasks.dataset.query import connect

    con = connect(data)
    try:
        folder = con.execute("select current_setting('temp_directory')").fetchone()[0]
    finally:
        con.close()
    assert Path(folder).parent == Path(tempfile.gettempdir())
    assert Path(folder).name.startswith(f"taskfactory-duckdb-{os.getpid()}-")


def test_a_timeout_past_the_platforms_clock_still_watches(data, tmp_path):
    """``--timeout 1e15`` (no upper bound is documented) is a limit like any other: the
    watchdog waits in hours at most, since select() cannot wait past time_t.  Before, its
    thread died with OverflowError and a Ctrl-C went unanswered."""
    proc = start(data, SORT.format(n=10**9), "--timeout", "1e15", cwd=tmp_path)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "OverflowError" not in err
    assert "interrupted" in err.lower() or "stopped" in err.lower(), err
