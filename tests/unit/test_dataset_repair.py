"""Repair, vacuum and the writer lock on real shards written by the real writer (no flow):
rebuilding a missing or older manifest, quarantining corrupt commits, killed writers'
commits, format-2 datasets, the retention window and the lock's explicit re-entry."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from flows.cli import main
from tasks.dataset.query import run_query
from tasks.dataset.store.commits import QUARANTINE, listed_groups, read_record
from tasks.dataset.store.lock import dataset_lock, open_for_writing
from tasks.dataset.store.manifest import MANIFEST, DatasetError, load_manifest, save_manifest
from tasks.dataset.store.repair import apply_repair, plan_repair
from tasks.dataset.store.writer import ShardWriter
from tests.support.small_dataset import RUN, build, group

V2 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v2"


def content(data: Path) -> dict:
    return {t: run_query(data, f"select * exclude (provenance) from {t} order by all")[1]
            for t in ("attempts", "steps", "runs")}


def files(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for p in sorted(data.rglob("*"))
            if p.is_file()}


def flip(path: Path, offset: int = 100) -> None:
    blob = bytearray(path.read_bytes())
    blob[offset] ^= 0x10
    path.write_bytes(bytes(blob))


def test_every_shard_names_its_commit_and_the_manifest_its_candidates(tmp_path):
    data = build(tmp_path / "d")
    manifest = load_manifest(data)
    assert [c.candidates for c in manifest.commits] == [
        ["c000", "c001"], ["c002", "c003"], ["c004", "c005"], []]
    for g in listed_groups(manifest):
        records = {read_record(data, e.path).model_dump_json() for e in g}
        assert len(records) == 1  # siblings carry the same record
        record = read_record(data, g[0].path)
        assert record.seqs == {e.table: int(e.path.split("-")[-1].split(".")[0]) for e in g}
        assert record.run is not None and record.run.config_hash == "c"


def test_a_missing_manifest_is_rebuilt_exactly(tmp_path):
    data = build(tmp_path / "d")
    before, rows = load_manifest(data), content(data)
    (data / MANIFEST).unlink()
    assert main(["repair", "--data", str(data)]) == 0
    after = load_manifest(data)
    assert after.shards == before.shards and after.commits == before.commits
    assert after.runs == before.runs and after.abandoned == [] and after.pending == {}
    assert content(data) == rows


def test_an_older_manifest_is_completed_from_the_later_commits(tmp_path):
    data = build(tmp_path / "d")
    before = load_manifest(data)
    older = before.model_copy(deep=True)
    older.shards = [s for s in older.shards if s.commit == 1]
    older.commits = older.commits[:1]
    older.runs[RUN].status = "running"
    save_manifest(data, older)
    with pytest.raises(DatasetError, match="more than the one commit"):
        open_for_writing(data).__enter__()
    plan = plan_repair(data)
    assert plan.rebuilt and plan.adopted == 3 and not plan.quarantine
    apply_repair(data, plan, "t")
    after = load_manifest(data)
    assert after.shards == before.shards and after.runs[RUN].status == "complete"
    assert [c.candidates for c in after.commits] == [c.candidates for c in before.commits]


def killed(data: Path, rows: list, last_as_temp: bool = False) -> list[Path]:
    """Commit ``rows`` as a writer killed before its manifest update leaves them (the
    last shard still under its temp name if ``last_as_temp``); returns the files."""
    before = (data / MANIFEST).read_bytes()
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, RUN)
        writer.add_group(rows)
        writer.commit()
        paths = [data / e.path for e in manifest.shards[-len({t for t, _ in rows}):]]
    (data / MANIFEST).write_bytes(before)
    if last_as_temp:
        paths[-1] = paths[-1].rename(paths[-1].with_name(f".{paths[-1].name}.tmp"))
    return paths


def test_a_killed_writers_incomplete_commit_is_never_adopted(tmp_path):
    data = build(tmp_path / "d", n=4, complete=False)
    before = load_manifest(data)
    left = killed(data, group(4), last_as_temp=True)
    (data / MANIFEST).unlink()  # and then the manifest is lost as well
    plan = plan_repair(data)
    apply_repair(data, plan, "t")
    after = load_manifest(data)
    assert after.shards == before.shards and after.commits == before.commits
    assert sorted(after.abandoned) == sorted(str(p.relative_to(data)) for p in left)
    assert plan.unfinished == {RUN: 1} and after.pending == {}  # `run --resume` runs c004
    assert after.runs[RUN].status == "running"


def test_a_commit_run_again_after_a_kill_is_adopted_once(tmp_path):
    data = build(tmp_path / "d", n=2, complete=False)
    left = killed(data, group(2))  # complete on disk, never listed
    with open_for_writing(data) as manifest:  # the resumed run writes c002 again
        assert sorted(manifest.abandoned) == sorted(str(p.relative_to(data)) for p in left)
        rerun = ShardWriter(data, manifest, RUN, max_rows=1)
        rerun.add_group(group(2))
    rows, before = content(data), load_manifest(data)
    (data / MANIFEST).unlink()
    plan = plan_repair(data)
    apply_repair(data, plan, "t")
    assert content(data) == rows  # c002 once, from the commit the manifest had listed
    after = load_manifest(data)
    assert after.shards == before.shards
    assert sorted(after.abandoned) == sorted(str(p.relative_to(data)) for p in left)


def test_corrupt_shards_are_quarantined_with_their_commit_and_their_candidates_pending(
        tmp_path):
    data = build(tmp_path / "d")
    manifest = load_manifest(data)
    steps = next(e for e in manifest.shards if e.table == "steps" and e.commit == 2)
    flip(data / steps.path)
    attempts = next(e for e in manifest.shards if e.table == "attempts" and e.commit == 3)
    (data / attempts.path).write_bytes((data / attempts.path).read_bytes()[:-50])
    corrupt = {steps.path: (data / steps.path).read_bytes(),
               attempts.path: (data / attempts.path).read_bytes()}
    with pytest.raises(DatasetError, match="corrupt shards.*taskfactory repair"):
        open_for_writing(data).__enter__()
    plan = plan_repair(data)
    assert sorted(plan.quarantine) == sorted(e.path for e in manifest.shards
                                             if e.commit in (2, 3))
    assert plan.manifest.pending == {RUN: ["c002", "c003", "c004", "c005"]}
    folder = apply_repair(data, plan, "20261202T000000")
    assert folder == data / QUARANTINE / "20261202T000000"
    for path, blob in corrupt.items():  # moved, byte for byte, not deleted
        assert (folder / path).read_bytes() == blob and not (data / path).exists()
    after = load_manifest(data)
    assert [c.number for c in after.commits] == [1, 4] and after.pending == plan.manifest.pending
    _, rows = run_query(data, "select candidate_id from attempts order by 1")
    assert rows == [("c000",), ("c001",)]
    with open_for_writing(data):  # consistent again: writers accept it
        pass


def test_format_2_dataset_reads_groups_by_table_order_and_repairs(tmp_path):
    data = tmp_path / "v2"
    shutil.copytree(V2, data)
    manifest = load_manifest(data)
    assert manifest.format == 2 and all(s.commit is None for s in manifest.shards)
    groups = [[e.path.split("/")[0] for e in g] for g in listed_groups(manifest)]
    assert groups == [["steps", "attempts"], ["steps", "attempts"], ["steps", "attempts"],
                      ["runs"], ["steps", "attempts"], ["steps", "attempts"], ["runs"]]
    _, rows = run_query(data, "select count(*), count(distinct candidate_id) from attempts")
    assert rows == [(8, 8)]
    target = manifest.listed("steps")[1]
    flip(data / target.path, 40)
    plan = plan_repair(data)
    assert plan.quarantine == [target.path, manifest.listed("attempts")[1].path]
    assert plan.manifest.pending == {"20261201T120000-aaaaaa": ["aaaaaa-c2"]}  # from attempts


def test_vacuum_deletes_only_unreferenced_files_older_than_the_window(tmp_path, capsys):
    data = build(tmp_path / "d", n=4, complete=False)
    killed(data, group(9))
    (data / "._manifest.json.tmp").write_bytes(b"{")
    (data / QUARANTINE / "old").mkdir(parents=True)
    (data / QUARANTINE / "old" / "x.parquet").write_bytes(b"x")
    unlisted = [p for p in data.rglob("part-*") if str(p.relative_to(data))
                not in {s.path for s in load_manifest(data).shards}]
    assert len(unlisted) == 2
    before = files(data)
    assert main(["vacuum", "--data", str(data), "--older-than", "1h"]) == 0
    assert files(data) == before  # nothing is an hour old
    assert main(["vacuum", "--data", str(data), "--older-than", "0s", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert files(data) == before and out.count("would delete") == 3
    old = time.time() - 7200
    for p in [*unlisted, data / "._manifest.json.tmp"]:
        os.utime(p, (old, old))
    assert main(["vacuum", "--data", str(data), "--older-than", "1h"]) == 0
    assert not any(p.exists() for p in unlisted) and not (data / "._manifest.json.tmp").exists()
    assert (data / QUARANTINE / "old" / "x.parquet").exists()  # kept unless asked
    assert load_manifest(data).abandoned == []
    assert main(["vacuum", "--data", str(data), "--older-than", "0s", "--quarantine"]) == 0
    assert not (data / QUARANTINE / "old").exists()
    assert run_query(data, "select count(*) from attempts")[1] == [(4,)]


def test_vacuum_and_run_refuse_a_folder_the_manifest_cannot_account_for(tmp_path, capsys):
    data = build(tmp_path / "d")
    (data / MANIFEST).unlink()
    before = files(data)
    assert main(["vacuum", "--data", str(data), "--older-than", "0s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no _manifest.json" in err[0] and "taskfactory repair" in err[0]
    assert main(["vacuum", "--data", str(data), "--older-than", "soon"]) == 2
    assert "--older-than" in capsys.readouterr().err
    assert files(data) == before


@pytest.mark.parametrize("text", ["[]", "42", '"manifest"', "null", "{", ""])
def test_a_manifest_that_is_not_an_object_is_one_line(tmp_path, capsys, text):
    data = build(tmp_path / "d")
    (data / MANIFEST).write_text(text)
    before = files(data)
    for argv in (["query", "select 1"], ["stats"], ["vacuum", "--older-than", "0s"],
                 ["export", "sft", "--out", str(tmp_path / "x.jsonl")]):
        assert main([*argv, "--data", str(data)]) == 2, argv
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith("taskfactory: error:") and "not a readable manifest" in line
        assert f"taskfactory repair --data {data}" in line
    assert files(data) == before and not (tmp_path / "x.jsonl").exists()
    assert main(["repair", "--data", str(data)]) == 0  # rebuilds it; the bad one is kept
    assert (data / QUARANTINE).is_dir() and load_manifest(data).commits


def test_the_lock_is_lent_once_and_only_explicitly(tmp_path):
    busy = pytest.raises(DatasetError, match="another taskfactory")
    with dataset_lock(tmp_path), busy, dataset_lock(tmp_path):
        pass
    with dataset_lock(tmp_path, lend=True):
        with open_for_writing(tmp_path), busy, open_for_writing(tmp_path):  # lent once only
            pass
        with open_for_writing(tmp_path):  # returned, so it can be lent again
            pass
    with open_for_writing(tmp_path):  # released
        pass


def test_repair_of_an_intact_dataset_changes_nothing(tmp_path, capsys):
    data = build(tmp_path / "d")
    before = files(data)
    assert main(["repair", "--data", str(data)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert files(data) == before
    assert json.loads((data / MANIFEST).read_text())["format"] == 3


def test_repair_of_an_empty_folder_writes_nothing(tmp_path, capsys):
    assert main(["repair", "--data", str(tmp_path)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
