"""What leaves a dataset is verified and confined: a random single-bit flip in any real
shard never changes a value served by ``query``, ``stats`` or an export, and user SQL
cannot write, read outside the dataset, attach, install, load or reconfigure anything.

Every shard of the session's real Docker run is flipped once, at a random byte and bit,
and read by every command: each (command, shard) pair is covered, where as many random
draws of the shard would leave about one in six shards unflipped and read others two or
three times.  The CLI is called in-process (``flows.cli.main``) to keep that fast.
"""

import json
import random
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.cli import main
from tasks.dataset.store.manifest import MANIFEST, load_manifest, save_manifest
from tests.support.fault_dataset import KEYS, snapshot

pytestmark = pytest.mark.docker
TABLES = list(KEYS)
KEY_COLUMNS = {t: [k.strip() for k in KEYS[t].split(",")] for t in TABLES}


@pytest.fixture
def data(fault_dataset, tmp_path):
    shutil.copytree(fault_dataset, tmp_path / "data")
    return tmp_path / "data"


def call(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def served(capsys, data: Path, scratch: Path, harbor: bool) -> tuple[dict, list[str]]:
    """Everything the read commands serve from ``data``: per command (exit code, output)."""
    got, errors = {}, []

    def run(*argv) -> tuple[int, str]:
        code, out, err = call(capsys, *argv, "--data", data)
        errors.extend(err.splitlines())
        return code, out

    for table in TABLES:
        code, out = run("query", f"select * from {table} order by {KEYS[table]}",
                        "--format", "json")
        got[table] = (code, [line for line in out.splitlines() if line])  # none: one ""
    got["stats"] = run("stats")
    sft = scratch / "sft.jsonl"
    sft.unlink(missing_ok=True)
    code, _ = run("export", "sft", "--out", sft)
    got["sft"] = (code, sft.read_text().splitlines() if sft.exists() else [])
    if harbor:
        out_dir = scratch / "harbor"
        shutil.rmtree(out_dir, ignore_errors=True)
        code, _ = run("export", "harbor", "--out", out_dir)
        got["harbor"] = (code, snapshot(out_dir) if out_dir.exists() else {})
    return got, errors


def keys_of(table: str, shard_file: Path) -> set[tuple]:
    t = pq.read_table(shard_file, columns=KEY_COLUMNS[table]).to_pylist()
    return {tuple(r[k] for k in KEY_COLUMNS[table]) for r in t}


def stats_without(data: Path, scratch: Path, rel: str, capsys) -> str:
    """``stats`` of the dataset with the shard ``rel`` gone (what the intact shards say)."""
    copy = scratch / "without"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data, copy)
    manifest = load_manifest(copy)
    manifest.shards = [s for s in manifest.shards if s.path != rel]
    save_manifest(copy, manifest)
    (copy / rel).unlink()
    code, out, _ = call(capsys, "stats", "--data", copy)
    assert code == 0
    return out


def test_a_bit_flip_in_any_shard_never_serves_a_changed_value(data, tmp_path, capsys):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    clean, warnings = served(capsys, data, scratch, harbor=True)
    assert warnings == [] and all(code == 0 for code, _ in clean.values())
    shards = load_manifest(data).shards
    assert {s.table for s in shards} == set(TABLES)  # every table has a shard to flip
    rng = random.Random(17)
    caught = 0
    for i, entry in enumerate(rng.sample(shards, len(shards))):
        path = data / entry.path
        original = path.read_bytes()
        offset, bit = rng.randrange(len(original)), rng.randrange(8)
        flipped = bytearray(original)
        flipped[offset] ^= 1 << bit
        path.write_bytes(bytes(flipped))
        try:
            harbor = entry.table == "tasks" or i % 10 == 0
            got, err = served(capsys, data, scratch, harbor)
        finally:
            path.write_bytes(original)
        where = f"flip {i}: {entry.path} byte {offset} bit {bit}"
        assert all(code == 3 for code, _ in got.values()), (where, got.keys())
        assert len(err) == len(got) and all(str(path) in e and "repair" in e for e in err), where
        gone = keys_of(entry.table, path)
        for table in TABLES:  # exactly the clean rows, less those of the flipped shard
            want = [line for line in clean[table][1] if table != entry.table
                    or tuple(json.loads(line)[k] for k in KEY_COLUMNS[table]) not in gone]
            assert got[table][1] == want, (where, table)
        sft = [line for line in clean["sft"][1] if entry.table != "trajectories"
               or (json.loads(line)["trajectory_id"],) not in gone]
        assert got["sft"][1] == sft, where
        if harbor:
            ids = {k[0] for k in gone} if entry.table == "tasks" else set()
            want = {p: b for p, b in clean["harbor"][1].items()
                    if not any(i in p.split("/")[0] for i in ids)}
            assert got["harbor"][1] == want, where
        assert got["stats"][1] == stats_without(data, scratch, entry.path, capsys), where
        caught += 1
    assert caught == len(shards)
    assert served(capsys, data, scratch, harbor=True)[0] == clean  # restored: all served again


ESCAPES = [
    "copy tasks to '{shard}'",
    "copy tasks to '{outside}/tasks.csv'",
    "copy (select 1 as x) to '{data}/tasks/part-x.parquet' (format parquet)",
    "select * from read_text('/etc/shadow')",
    "select * from read_text('{data}/_manifest.json')",
    "select * from read_blob('{outside}/secret.txt')",
    "select * from read_csv('/etc/passwd')",
    "select * from read_parquet('{data}/tasks/*.parquet')",
    "select * from glob('/etc/*')",
    "select * from parquet_metadata('{outside}/other.parquet')",
    "select * from read_json('http://127.0.0.1:9/x.json')",
    "select * from query('copy tasks to ''{outside}/q.csv''')",
    "attach '{outside}/x.db' as x",
    "install httpfs",
    "load httpfs",
    "set threads = 1",
    "set enable_external_access = true",
    "reset lock_configuration",
    "pragma enable_profiling = 'json'",
    "pragma memory_limit = '1GB'",
    "create table t as select 1",
    "create view v as select 1",
    "create temp table t as select 1",
    "create macro m() as 1",
    "insert into tasks select * from tasks",
    "delete from tasks",
    "export database '{outside}/db'",
    "checkpoint",
    "call pragma_version()",
    "explain analyze copy tasks to '{outside}/e.csv'",
    "select 1; copy tasks to '{outside}/two.csv'",
    "use memory",
    "detach memory",
    "vacuum",
]


@pytest.mark.parametrize("sql", ESCAPES)
def test_every_query_escape_is_refused_with_one_line(data, tmp_path, capsys, sql):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-CONTENT")
    pq.write_table(pq.read_table(data / load_manifest(data).listed("runs")[0].path),
                   outside / "other.parquet")
    shard = data / load_manifest(data).listed("tasks")[0].path
    before, around = snapshot(data), snapshot(outside)
    code, out, err = call(capsys, "query", sql.format(shard=shard, outside=outside, data=data),
                          "--data", data)
    assert code == 2 and out == "", (code, out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("taskfactory: error: query") and "TOP-SECRET" not in line
    assert snapshot(data) == before and snapshot(outside) == around
    assert not (data / MANIFEST).with_name("x.db").exists()


def test_read_statements_still_answer(data, capsys):
    for sql in ("select count(*) from tasks", "describe tasks", "summarize attempts",
                "with t as (select * from steps) select tool, count(*) from t group by 1",
                "from runs select run_id", "show tables"):
        code, out, err = call(capsys, "query", sql, "--data", data)
        assert code == 0 and err == "", (sql, err)
