"""Nothing leaves its folder: the defects of a dataset handed over by someone else, each
reproduced on a real dataset and checked against a guard folder beside it
(:class:`tests.support.crafted.Guard`: listing, content, mtime and access time).

The commands run in this process through ``flows.cli.main``; the ``export harbor``
dataset holds one real accepted task of the built-in ``files`` ecosystem, made by the
per-candidate pipeline on the local backend.
"""

import os
import shutil
from pathlib import Path

import pytest

from tasks.dataset.store.commits import QUARANTINE
from tasks.dataset.store.lock import LOCK
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tests.support.crafted import (
    cli,
    edit_manifest,
    one_line,
    rewrite_shard,
    set_column,
)
from tests.support.small_dataset import RUN, build

SHARD = f"part-{RUN}-00099.0123456789abcdef.parquet"
"""A name a shard of the dataset's run could have (never listed)."""


@pytest.fixture
def data(tmp_path) -> Path:
    return build(tmp_path / "data")


@pytest.fixture(scope="module")
def task_dataset(tmp_path_factory) -> Path:
    from environments.local.config import LocalConfig
    from tests.support.dataset import write_outcomes
    from tests.support.harbor_data import accepted

    data = tmp_path_factory.mktemp("tasks") / "data"
    write_outcomes(data, "utest-boundary", accepted(["files"], LocalConfig(), 1,
                                                    f"utest-boundary-{os.getpid()}"))
    return data


@pytest.mark.parametrize("column,values", [
    ("task_id", ["/", "/../../guard/victimdir"]),  # the first makes out/files-, the second
    ("task_id", ["..", "a/b"]),                     # reached the guard through it
    ("task_id", ["x\n", "\x00"]),
    ("ecosystem", ["../guard", "files/../../guard"]),
])
def test_export_never_leaves_out_for_a_crafted_row(task_dataset, tmp_path, guard, column,
                                                   values):
    data = tmp_path / "data"
    shutil.copytree(task_dataset, data)
    (tmp_path / "out").mkdir()
    rewrite_shard(data, "tasks", lambda rows: set_column(
        rows.take([0] * len(values)), column, values))
    guard.settle()
    code, _, err = cli("export", "harbor", "--data", data, "--out", tmp_path / "out")
    assert guard.changes() == {}
    assert code == 2 and ("task id" in one_line(err) or "ecosystem" in one_line(err))
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("there", ["folder", "link", "file"])
def test_export_never_replaces_what_it_did_not_write(task_dataset, tmp_path, guard, there):
    out = tmp_path / "out"
    assert cli("export", "harbor", "--data", task_dataset, "--out", out)[0] == 0
    (folder,) = out.iterdir()
    shutil.rmtree(folder)
    if there == "folder":
        folder.mkdir()
        (folder / "notes.txt").write_text("the user's")
    elif there == "link":
        folder.symlink_to(guard.root / "victimdir")
    else:
        folder.write_text("the user's")
    guard.settle()
    before = sorted(os.listdir(out))
    code, _, err = cli("export", "harbor", "--data", task_dataset, "--out", out)
    assert code == 2 and "is not a task folder taskfactory exported" in one_line(err)
    assert guard.changes() == {} and sorted(os.listdir(out)) == before
    assert there != "folder" or (folder / "notes.txt").read_text() == "the user's"


def test_export_replaces_its_own_folder(task_dataset, tmp_path):
    out = tmp_path / "out"
    assert cli("export", "harbor", "--data", task_dataset, "--out", out)[0] == 0
    (folder,) = out.iterdir()
    (folder / "instruction.md").write_text("edited")
    assert cli("export", "harbor", "--data", task_dataset, "--out", out)[0] == 0
    assert [p.name for p in out.iterdir()] == [folder.name]  # no temp folder left
    assert (folder / "instruction.md").read_text() != "edited"


def test_repair_and_vacuum_never_move_or_delete_a_file_a_manifest_path_names(data, guard):
    rows = load_manifest(data).shards
    edit_manifest(data, lambda raw: raw["shards"][0].update(
        path="../guard/important.txt", sha256="0" * 64))
    guard.settle()
    code, out, err = cli("repair", "--data", data)
    assert guard.changes() == {}
    assert code == 0, err
    assert load_manifest(data).shards == rows  # rebuilt from the shards' commit records
    assert cli("vacuum", "--data", data, "--older-than", "0s", "--quarantine")[0] == 0
    assert guard.changes() == {}


@pytest.mark.parametrize("folder", [QUARANTINE, "trajectories"])
def test_vacuum_never_follows_a_symlinked_folder(data, guard, folder):
    (guard.root / "victimdir" / SHARD).write_bytes(b"the user's")
    (data / folder).symlink_to(guard.root / ("victimdir" if folder != QUARANTINE else ""))
    guard.settle()
    code, _, err = cli("vacuum", "--data", data, "--older-than", "0s", "--quarantine")
    assert guard.changes() == {}
    assert code == 0, err  # the link itself is left alone, and reported by repair
    code, out, _ = cli("repair", "--data", data)
    assert code == 0 and f"{folder} is a symbolic link" in out
    assert guard.changes() == {}


@pytest.mark.parametrize("argv", [
    ["card"], ["query", "select 1"], ["stats"], ["vacuum", "--older-than", "0s"], ["repair"],
    ["export", "sft", "--out", "x.jsonl"], ["export", "preference", "--out", "x.jsonl"]])
def test_a_folder_the_factory_did_not_make_is_refused(guard, argv):
    (guard.root / "plots").mkdir()
    (guard.root / "plots" / "depth.png").write_bytes(b"\x89PNG the user's plot")
    guard.settle()
    code, _, err = cli(*argv, "--data", guard.root)
    assert code == 2 and "not a taskfactory dataset" in one_line(err)
    assert guard.changes(listed=True) == {} and not (guard.root / LOCK).exists()


def test_run_refuses_a_folder_the_factory_did_not_make(guard):
    code, _, err = cli("run", "--data", guard.root, "--backend", "local", "--tasks", 1)
    assert code == 2 and "not a taskfactory dataset" in one_line(err)
    assert guard.changes(listed=True) == {}


@pytest.mark.parametrize("argv", [["query", "select 1"], ["stats"]])
def test_etc_is_not_a_dataset(argv):
    code, _, err = cli(*argv, "--data", "/etc")
    assert code == 2 and "not a taskfactory dataset" in one_line(err)
    assert not Path("/etc", LOCK).exists()


@pytest.mark.parametrize("argv", [
    ["query", "select 1", "--data", ""], ["stats", "--data", ""], ["card", "--data", ""],
    ["repair", "--data", ""], ["vacuum", "--older-than", "0s", "--data", ""],
    ["run", "--data", ""], ["export", "sft", "--data", "", "--out", "x.jsonl"],
    ["export", "harbor", "--out", ""]])
def test_an_empty_path_is_refused(data, monkeypatch, argv):
    monkeypatch.chdir(data)  # "" used to mean the current folder
    before = sorted(os.listdir(data))
    code, _, err = cli(*argv)
    assert code == 2 and "empty" in one_line(err)
    assert sorted(os.listdir(data)) == before


def test_an_older_dataset_without_a_marker_is_recognised_and_marked_on_its_next_write(data):
    (data / "_taskfactory").unlink()
    assert cli("query", "select count(*) from attempts", "--data", data)[0] == 0
    assert not (data / "_taskfactory").exists()  # a reader writes nothing
    (data / "._manifest.json.tmp").write_bytes(b"{")
    os.utime(data / "._manifest.json.tmp", (0, 0))
    assert cli("vacuum", "--data", data, "--older-than", "1h")[0] == 0  # saves the manifest
    assert (data / "_taskfactory").is_file() and not (data / "._manifest.json.tmp").exists()


def test_a_shard_path_into_a_table_folder_of_another_dataset_is_refused(data, tmp_path):
    other = build(tmp_path / "other")
    path = load_manifest(other).shards[0].path
    edit_manifest(data, lambda raw: raw["shards"][0].update(path=f"../other/{path}"))
    code, _, err = cli("query", "select 1", "--data", data)
    assert code == 2 and MANIFEST in one_line(err)
