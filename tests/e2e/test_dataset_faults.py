"""Faults a long-running factory meets in its dataset, injected into a real one.

Each test copies one uninterrupted Docker run (``fault_dataset``), breaks it — manifest
deleted or restored from an older backup, a shard overwritten, truncated or corrupted,
two writers at once — and checks what the real CLI does: readers serve only verified
rows and say so (exit 3), writers refuse with one line (exit 2) before writing anything,
and ``taskfactory repair`` returns the dataset to what the uninterrupted run wrote.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.dataset.store.commits import QUARANTINE
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tests.support.fault_dataset import (
    SETTINGS,
    content,
    one_error_line,
    run_cli,
    snapshot,
)

pytestmark = pytest.mark.docker


@pytest.fixture
def data(fault_dataset, tmp_path):
    shutil.copytree(fault_dataset, tmp_path / "data")
    return tmp_path / "data"


@pytest.fixture
def cli(prefect_api_url):
    return lambda *args: run_cli(prefect_api_url, *args)


def refused_before_writing(cli, data: Path, *args) -> str:
    """Run a same-seed ``run`` (or ``args``) on ``data``: one error line, exit 2, every
    file of the folder unchanged; returns the line."""
    before = snapshot(data)
    line = one_error_line(cli(*(args or ("run", *SETTINGS)), "--data", data))
    assert snapshot(data) == before
    return line


def repaired(cli, data: Path) -> str:
    proc = cli("repair", "--data", data)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(proc.stdout.strip().splitlines()) <= 8, proc.stdout  # says it in a few lines
    return proc.stdout


def corrupt(path: Path, offset: int) -> bytes:
    blob = bytearray(path.read_bytes())
    blob[offset] ^= 0x01
    path.write_bytes(bytes(blob))
    return bytes(blob)


def shard(data: Path, table: str, n: int = 0) -> Path:
    return data / load_manifest(data).listed(table)[n].path


def test_a_deleted_manifest_is_refused_and_rebuilt(cli, data, fault_dataset):
    (data / MANIFEST).unlink()
    line = refused_before_writing(cli, data)
    assert "but no _manifest.json" in line and f"taskfactory repair --data {data}" in line
    query = cli("query", "select count(*) from tasks", "--data", data)
    assert query.returncode == 3 and "taskfactory repair" in query.stderr
    out = repaired(cli, data)
    assert "rebuilt" in out and "re-running" not in out
    ref = load_manifest(fault_dataset)
    new = load_manifest(data)
    assert new.shards == ref.shards and new.commits == ref.commits and new.runs == ref.runs
    assert content(data) == content(fault_dataset)
    again = cli("run", *SETTINGS, "--data", data)
    assert again.returncode == 0 and "nothing to do" in again.stdout


def test_an_older_manifest_is_refused_and_completed(cli, data, fault_dataset):
    manifest = load_manifest(data)
    keep = {c.number for c in manifest.commits[:3]}  # a backup from early in the run
    older = manifest.model_copy(update={
        "shards": [s for s in manifest.shards if s.commit in keep],
        "commits": [c for c in manifest.commits if c.number in keep]}, deep=True)
    for entry in older.runs.values():
        entry.status = "running"
    (data / MANIFEST).write_text(older.model_dump_json())
    line = refused_before_writing(cli, data)
    assert "more than the one commit" in line and "taskfactory repair" in line
    refused_before_writing(cli, data, "run", "--resume")
    refused_before_writing(cli, data, "vacuum", "--older-than", "0s")
    repaired(cli, data)
    assert load_manifest(data).shards == load_manifest(fault_dataset).shards
    assert content(data) == content(fault_dataset)


def test_a_shard_overwritten_in_place_is_never_served_and_repaired(cli, data, fault_dataset):
    # what `COPY tasks TO '<data>/tasks/part-….parquet'` did before queries were read-only
    target = shard(data, "tasks", 1)
    pq.write_table(pq.read_table(shard(data, "tasks", 0)), target)
    query = cli("query", "select task_id from tasks", "--data", data, "--format", "csv")
    assert query.returncode == 3 and str(target) in query.stderr
    served = set(query.stdout.split()[1:])
    clean = {r["task_id"] for r in content(fault_dataset)["tasks"]}
    assert served < clean  # the duplicated rows are not served: the shard is left out
    assert "corrupt shards" in refused_before_writing(cli, data)
    repaired(cli, data)
    assert content(data) == content(fault_dataset)


def test_a_truncated_shard_is_reported_with_exit_3_and_repaired(cli, data, fault_dataset):
    target = shard(data, "trajectories", 2)
    target.write_bytes(target.read_bytes()[:-200])
    for args in (["query", "select count(*) from trajectories"], ["stats"]):
        proc = cli(*args, "--data", data)
        assert proc.returncode == 3 and str(target) in proc.stderr and "bytes" in proc.stderr
    refused_before_writing(cli, data)
    out = repaired(cli, data)
    assert "quarantined" in out and "re-running 1 candidates" in out
    assert content(data) == content(fault_dataset)


def test_a_corrupt_attempts_shard_refuses_a_same_seed_run_and_repair_fixes_it(
        cli, data, fault_dataset):
    target = shard(data, "attempts", 0)
    rows = pq.read_metadata(target).num_rows
    corrupt(target, target.stat().st_size // 2)
    line = refused_before_writing(cli, data)
    assert str(target) in line and f"taskfactory repair --data {data}" in line
    out = repaired(cli, data)
    assert f"re-running {rows} candidates" in out
    assert content(data) == content(fault_dataset)
    again = cli("run", *SETTINGS, "--data", data)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert content(data) == content(fault_dataset)  # no dedup rows, nothing run again


def test_repair_with_two_corrupt_shards_equals_an_uninterrupted_run(cli, data, fault_dataset):
    manifest = load_manifest(data)
    # commits without the runs row: the repair writes no runs row, the run still completes
    closing = {s.commit for s in manifest.listed("runs")}
    first = next(s for s in manifest.listed("tasks") if s.commit not in closing)
    second = next(s for s in manifest.listed("trajectories")
                  if s.commit not in closing | {first.commit})
    broken = {p: corrupt(data / p, 4 + i) for i, p in enumerate((first.path, second.path))}
    lost = {c for commit in manifest.commits if commit.number in (first.commit, second.commit)
            for c in commit.candidates}
    out = repaired(cli, data)
    assert f"re-running {len(lost)} candidates" in out
    quarantine = next((data / QUARANTINE).iterdir())
    moved = {str(p.relative_to(quarantine)) for p in quarantine.rglob("*.parquet")}
    assert moved == {s.path for s in manifest.shards if s.commit in (first.commit,
                                                                      second.commit)}
    for path, blob in broken.items():  # kept byte for byte
        assert (quarantine / path).read_bytes() == blob
    ref, got = content(fault_dataset), content(data)
    assert [r["task_id"] for r in got["tasks"]] == [r["task_id"] for r in ref["tasks"]]
    for table in ref:
        assert got[table] == ref[table], table
    runs = load_manifest(data).runs
    assert [(e.status, e.resumes) for e in runs.values()] == [("complete", 0)]
    assert load_manifest(data).pending == {}


def test_two_runs_started_together_one_loses_at_once_and_writes_nothing(prefect_api_url, data):
    env = {**os.environ, "PREFECT_API_URL": prefect_api_url}
    more = [str(a) for a in SETTINGS]
    more[1] = "16"  # four new candidates, so the winner has work to do
    procs = [subprocess.Popen([sys.executable, "-m", "flows.cli", "run", *more, "--data",
                               str(data)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=900), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    loser = next(r for r in results if r[0] == 2)
    (line,) = loser[2].strip().splitlines()
    assert "another taskfactory process is writing to" in line and loser[1] == ""
    manifest = load_manifest(data)
    assert len(manifest.runs) == 2  # the session's run and the winner's, nothing of the loser
    rows = cli_rows(prefect_api_url, data, "select count(*), count(distinct run_id) from runs")
    assert rows == ["2,2"]


def cli_rows(api_url: str, data: Path, sql: str) -> list[str]:
    proc = run_cli(api_url, "query", sql, "--data", data, "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[1:]


@pytest.mark.parametrize("text", ["[]", '"not a manifest"', "7"])
def test_a_manifest_that_is_json_but_not_an_object_is_one_line(cli, data, text):
    (data / MANIFEST).write_text(text)
    for args in (["run", *SETTINGS], ["run", "--resume"], ["query", "select 1"], ["stats"]):
        line = refused_before_writing(cli, data, *args)
        assert "is not a readable manifest" in line and "taskfactory repair" in line
