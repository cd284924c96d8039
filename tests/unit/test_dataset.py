"""Shards: explicit Arrow schemas from the pydantic rows, atomic files, DuckDB views."""

import hashlib
import json
from datetime import UTC, datetime

import pyarrow.parquet as pq

from flows.query import run_query
from schemas.arrow import arrow_schema
from schemas.records import AttemptRow, Message, TrajectoryRow
from tasks.publish import ShardWriter


def attempt(i, status="rejected"):
    return AttemptRow(candidate_id=f"c{i}", run_id="r1", index=i, ecosystem="files", seed=i,
                      shape="chain", depth=1, fingerprint="f", status=status, stage="execute",
                      reason="binding", detail="", task_id=None, backend="local", repairs=[],
                      sandboxes=2, sandbox_s=0.1, execute_s=0.2, gate_s=0.0, render_s=0.0,
                      total_s=0.3,
                      created_at=datetime.now(UTC))


def test_writer_flushes_by_rows_and_manifest_matches_files(tmp_path):
    writer = ShardWriter(tmp_path, "r1", rows_per_shard=4)
    for i in range(10):
        writer.add("attempts", attempt(i))
    writer.close()
    shards = sorted((tmp_path / "attempts").glob("*.parquet"))
    assert len(shards) == 3
    assert not list(tmp_path.rglob(".*.tmp"))
    manifest = json.loads((tmp_path / "_manifest.json").read_text())
    assert [s["rows"] for s in manifest["shards"]] == [4, 4, 2]
    for entry in manifest["shards"]:
        data = (tmp_path / entry["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    f = pq.ParquetFile(shards[0])
    assert f.schema_arrow.remove_metadata() == arrow_schema(AttemptRow)
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"
    cols, rows = run_query(tmp_path, "select count(*), count(distinct candidate_id) from attempts")
    assert rows == [(10, 10)]


def test_empty_tables_are_queryable_views(tmp_path):
    cols, rows = run_query(tmp_path, "select count(*) from tasks")
    assert rows == [(0,)]
    cols, _ = run_query(tmp_path, "select * from trajectories")
    assert "messages" in cols and "supervision" in cols


def test_nested_messages_round_trip(tmp_path):
    writer = ShardWriter(tmp_path, "r1")
    writer.add("trajectories", TrajectoryRow(
        trajectory_id="t", task_id="k", run_id="r1", tools="[]", supervision="masked",
        action_space="function", reward=1.0, n_turns=1, created_at=datetime.now(UTC),
        messages=[Message(role="user", content="hi"),
                  Message(role="assistant", content="ok", train=True, weight=1)]))
    writer.close()
    _, rows = run_query(tmp_path, "select m.role, m.train, m.weight from trajectories, "
                                  "unnest(messages) as u(m)")
    assert rows == [("user", False, 0), ("assistant", True, 1)]
