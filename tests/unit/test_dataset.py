"""Shards: explicit Arrow schemas, atomic commits with a manifest, DuckDB views, corruption,
orphans, locking and reading datasets of older schema versions."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas.arrow import arrow_schema
from schemas.records import SCHEMA_VERSION, AttemptRow, Message, Provenance, StepRow, TrajectoryRow
from tasks.dataset.query import connect, run_query
from tasks.dataset.store.checksums import shard_problem
from tasks.dataset.store.lock import dataset_lock, open_for_writing
from tasks.dataset.store.manifest import DatasetError, load_manifest
from tasks.dataset.store.writer import ShardWriter

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"
PROV = Provenance(run_id="r1", flow_run_id=None, generator_version="0+test", config_hash="c",
                  seed=0, image_id=None, template_hash="t", llm_model=None, llm_params=None,
                  created_at=datetime.now(UTC))


def attempt(i, status="rejected", prov=PROV):
    return AttemptRow(candidate_id=f"c{i}", run_id="r1", index=i, ecosystem="files", seed=i,
                      shape="chain", depth=1, fingerprint="f", status=status, stage="execute",
                      reason="binding", detail="", task_id=None, backend="local", repairs=[],
                      sandboxes=2, sandbox_s=0.1, execute_s=0.2, gate_s=0.0, render_s=0.0,
                      total_s=0.3,
                      created_at=datetime.now(UTC), provenance=prov)


def step(i, k):
    return StepRow(task_id=f"t{i}", run_id="r1", position=k, step_id=f"s{k}", tool="grep",
                   args_json="{}", command="grep x", exit_code=0, stdout="x", stderr="",
                   truncated=False, duration_s=0.01, output_type="lines", provenance=PROV)


def write(data, groups, **kw):
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, "r1", **kw)
        for g in groups:
            writer.add_group(g)
        writer.close()
    return writer


def test_writer_flushes_by_rows_and_manifest_matches_files(tmp_path):
    write(tmp_path, [[("attempts", attempt(i))] for i in range(10)], max_rows=4)
    shards = sorted((tmp_path / "attempts").glob("*.parquet"))
    assert len(shards) == 3
    assert not list(tmp_path.rglob(".*.tmp"))
    manifest = json.loads((tmp_path / "_manifest.json").read_text())
    assert [s["rows"] for s in manifest["shards"]] == [4, 4, 2]
    for entry in manifest["shards"]:
        data = (tmp_path / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["bytes"] and entry["schema_version"] == SCHEMA_VERSION
    f = pq.ParquetFile(shards[0])
    assert f.schema_arrow.remove_metadata() == arrow_schema(AttemptRow)
    assert f.schema_arrow.metadata[b"schema_version"] == str(SCHEMA_VERSION).encode()
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"
    cols, rows = run_query(tmp_path, "select count(*), count(distinct candidate_id), "
                                     "count(provenance.config_hash) from attempts")
    assert rows == [(10, 10, 10)]


def test_a_group_is_never_split_between_commits(tmp_path):
    # each group: one attempt and three steps; commits by rows (steps reach 4 first) and
    # by bytes; after every commit the tables agree on which candidates are in
    groups = [[("attempts", attempt(i))] + [("steps", step(i, k)) for k in range(3)]
              for i in range(7)]
    writer = write(tmp_path, groups, max_rows=4)
    assert writer.commits == 4  # 2 groups (6 steps >= 4) per commit, the last alone
    manifest = load_manifest(tmp_path)
    for n in range(1, len(manifest.shards) // 2 + 1):
        prefix = manifest.shards[: 2 * n]
        rows = {t: sum(s.rows for s in prefix if s.table == t) for t in ("attempts", "steps")}
        assert rows["steps"] == 3 * rows["attempts"]
    writer = write(tmp_path / "b", groups, max_bytes=1)
    assert writer.commits == 7


def test_rows_without_provenance_are_refused(tmp_path):
    with open_for_writing(tmp_path) as manifest:
        writer = ShardWriter(tmp_path, manifest, "r1")
        with pytest.raises(ValueError, match="without provenance"):
            writer.add_group([("attempts", attempt(0, prov=None))])


def test_empty_tables_are_queryable_views(tmp_path):
    cols, rows = run_query(tmp_path, "select count(*) from tasks")
    assert rows == [(0,)]
    cols, _ = run_query(tmp_path, "select * from trajectories")
    assert "messages" in cols and "supervision" in cols and "provenance" in cols
    for table in ("steps", "runs"):
        assert run_query(tmp_path, f"select count(*) from {table}")[1] == [(0,)]


def test_nested_messages_round_trip(tmp_path):
    write(tmp_path, [[("trajectories", TrajectoryRow(
        trajectory_id="t", task_id="k", run_id="r1", tools="[]", supervision="masked",
        action_space="function", reward=1.0, n_turns=1, created_at=datetime.now(UTC),
        provenance=PROV, messages=[Message(role="user", content="hi"),
                                   Message(role="assistant", content="ok", train=True,
                                           weight=1)]))]])
    _, rows = run_query(tmp_path, "select m.role, m.train, m.weight from trajectories, "
                                  "unnest(messages) as u(m)")
    assert rows == [("user", False, 0), ("assistant", True, 1)]


def killed_commit(data, group):
    """Commit ``group`` as a writer killed before its manifest update leaves it: the
    shards on disk (the last one still under its temp name), the manifest as before."""
    before = (data / "_manifest.json").read_bytes()
    write(data, [group])
    new = load_manifest(data).shards[-len({t for t, _ in group}):]
    (data / "_manifest.json").write_bytes(before)
    last = data / new[-1].path
    last.rename(last.with_name(f".{last.name}.tmp"))
    return [data / e.path for e in new[:-1]] + [last.with_name(f".{last.name}.tmp")]


def test_a_killed_writers_commit_is_never_read_never_deleted_and_never_reused(tmp_path):
    write(tmp_path, [[("attempts", attempt(i))] for i in range(3)])
    left = killed_commit(tmp_path, [("attempts", attempt(5)), ("steps", step(5, 0))])
    assert [p.name[:14] for p in left] == ["part-r1-00002.", ".part-r1-00003"]
    assert run_query(tmp_path, "select count(*) from attempts")[1] == [(3,)]
    warnings = []
    with open_for_writing(tmp_path, warn=warnings.append) as manifest:
        assert sorted(manifest.abandoned) == sorted(str(p.relative_to(tmp_path)) for p in left)
        writer = ShardWriter(tmp_path, manifest, "r1")
        writer.add_group([("attempts", attempt(7))])
        writer.close()
    assert len(warnings) == 1 and "vacuum" in warnings[0] and left[0].name in warnings[0]
    assert all(p.exists() for p in left)  # nothing deleted
    new = load_manifest(tmp_path).shards[-1]
    assert new.path.startswith("attempts/part-r1-00004.")  # after every seq on disk
    assert run_query(tmp_path, "select count(*) from attempts")[1] == [(4,)]
    assert sorted(load_manifest(tmp_path).abandoned) == sorted(manifest.abandoned)


def test_shards_the_manifest_cannot_account_for_refuse_every_writer(tmp_path):
    write(tmp_path, [[("attempts", attempt(i))] for i in range(4)], max_rows=1)
    manifest = load_manifest(tmp_path)
    older = manifest.model_copy(update={"shards": manifest.shards[:2],
                                        "commits": manifest.commits[:2]})
    (tmp_path / "_manifest.json").write_text(older.model_dump_json())
    files = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(DatasetError, match="more than the one commit.*taskfactory repair"):
        write(tmp_path, [[("attempts", attempt(9))]])
    (tmp_path / "_manifest.json").unlink()
    with pytest.raises(DatasetError, match="4 shard files but no _manifest.json.*repair"):
        write(tmp_path, [[("attempts", attempt(9))]])
    assert sorted(p.name for p in tmp_path.rglob("*")) == [f for f in files
                                                            if f != "_manifest.json"]


def test_a_truncated_shard_is_reported_and_the_intact_ones_still_answer(tmp_path):
    write(tmp_path, [[("attempts", attempt(i))] for i in range(6)], max_rows=2)
    manifest = load_manifest(tmp_path)
    bad = tmp_path / manifest.shards[1].path
    bad.write_bytes(bad.read_bytes()[:-100])
    warnings = []
    _, rows = run_query(tmp_path, "select count(*) from attempts", warn=warnings.append)
    assert rows == [(4,)]
    assert len(warnings) == 1 and str(bad) in warnings[0] and "bytes" in warnings[0]


def test_a_flipped_byte_is_caught_on_every_read(tmp_path):
    write(tmp_path, [[("attempts", attempt(i))] for i in range(4)], max_rows=2)
    bad = tmp_path / load_manifest(tmp_path).shards[0].path
    assert shard_problem(tmp_path, load_manifest(tmp_path).shards[0]) is None
    blob = bytearray(bad.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    bad.write_bytes(bytes(blob))
    entry = load_manifest(tmp_path).shards[0]
    assert shard_problem(tmp_path, entry) == "sha256 differs from the manifest"  # not cached
    warnings = []
    con = connect(tmp_path, warn=warnings.append)
    assert con.execute("select count(*) from attempts").fetchone() == (2,)
    assert len(warnings) == 1 and "sha256" in warnings[0] and str(bad) in warnings[0]
    assert "taskfactory repair --data" in warnings[0]


def test_one_writer_at_a_time(tmp_path):
    with (open_for_writing(tmp_path),
          pytest.raises(DatasetError, match="another taskfactory"),
          open_for_writing(tmp_path)):
        pass


def test_a_version_1_dataset_reads_with_new_columns_as_null(tmp_path):
    data = tmp_path / "v1"
    shutil.copytree(V1, data)
    assert json.loads((data / "_manifest.json").read_text())["schema_version"] == 1
    _, rows = run_query(data, "select count(*), count(provenance), min(schema_version), "
                              "min(gate.reference_reward) from tasks")
    assert rows == [(6, 0, 1, 1.0)]
    assert run_query(data, "select count(*) from steps")[1] == [(0,)]
    # appending rows of this version to it: both read as one table
    write(data, [[("attempts", attempt(i))] for i in range(2)])
    _, rows = run_query(data, "select schema_version, count(*), count(provenance) from "
                              "attempts group by 1 order by 1")
    assert rows == [(1, 6, 0), (SCHEMA_VERSION, 2, 2)]
    assert load_manifest(data).schema_version == SCHEMA_VERSION


def test_a_newer_schema_version_fails_with_both_versions_named(tmp_path):
    data = tmp_path / "v9"
    shutil.copytree(V1, data)
    raw = json.loads((data / "_manifest.json").read_text())
    raw["schema_version"] = SCHEMA_VERSION + 7
    (data / "_manifest.json").write_text(json.dumps(raw))
    with pytest.raises(DatasetError) as err:
        connect(data)
    assert f"schema version {SCHEMA_VERSION + 7}" in str(err.value)
    assert f"versions 1 to {SCHEMA_VERSION}" in str(err.value)


def test_a_killed_writer_releases_the_lock_though_a_forked_child_lives_on(tmp_path):
    # a sandbox child caught between fork and exec when its parent is SIGKILLed still has
    # the lock file open; the lock must die with the parent all the same
    code = ("import os, signal, sys, time\nfrom pathlib import Path\n"
            "from tasks.dataset.store.lock import open_for_writing\n"
            "with open_for_writing(Path(sys.argv[1])):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:  # keeps the lock file open, lets go of the output pipes\n"
            "        os.close(1)\n"
            "        os.close(2)\n"
            "        time.sleep(60)\n"
            "        os._exit(0)\n"
            "    print(pid, flush=True)\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, cwd=Path(__file__).parents[2], timeout=60)
    child = int(proc.stdout)
    try:
        assert proc.returncode == -signal.SIGKILL
        os.kill(child, 0)  # alive, with the lock file open
        with dataset_lock(tmp_path):
            pass
    finally:
        os.kill(child, signal.SIGKILL)


def test_stats_lists_the_tools_that_never_ran_in_an_accepted_task(tmp_path):
    """``explode`` was planned twice, replaced once and rejected once: never succeeded;
    ``grep`` ran in the accepted task."""
    from tasks.dataset.report.stats import tools_never_succeeded

    accepted = attempt(0, status="accepted").model_copy(update={
        "task_id": "t0", "tools": ["grep", "explode"], "stage": "accepted",
        "repairs": ["substitute s2 tool_error: explode: exit 1: boom"]})
    rejected = attempt(1).model_copy(update={"tools": ["explode"], "reason": "tool_error"})
    other = attempt(2).model_copy(update={"tools": ["grep"]})
    write(tmp_path, [[("attempts", accepted), ("steps", step(0, 0)), ("steps", step(0, 1))],
                     [("attempts", rejected)], [("attempts", other)]])
    section = tools_never_succeeded(connect(tmp_path))
    rows = [line for line in section.splitlines() if line.startswith("| files")]
    assert rows == ["| files | explode | 2 | 1 |"]
