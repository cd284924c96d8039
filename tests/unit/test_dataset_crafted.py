"""A crafted-dataset suite: every craft an attacker can hand over in a dataset folder,
against every command that reads or mends one.

Crafts: path traversal in manifest paths and ids, symbolic links and FIFOs at every level
(the manifest, the marker, the lock, a temp name, a table folder, a listed and an
unlisted shard, ``_quarantine`` and a folder in it, ``plots``), a shard listed twice, a
newer format, names that are not UTF-8.  For each craft and command: nothing in the
guard folder beside the dataset is read, listed, written or deleted (its listing,
contents, mtimes and access times: :class:`tests.support.crafted.Guard`), nothing is
written outside ``--out``, no traceback, and the exit code says what happened — 0 or 3
(answered, the bad shard named in ``warning:`` lines), 2 with one ``taskfactory: error:``
line.  The dataset is real (:mod:`tests.support.small_dataset`) with its run unfinished,
so ``repair`` starts no flow; commands run in this process, a FIFO that a command opened
would hang it (the timeout fails the test).
"""

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tasks.dataset.store.commits import QUARANTINE
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tests.support.crafted import Guard, cli, edit_manifest
from tests.support.small_dataset import RUN, build

SHARD = f"part-{RUN}-00090.0123456789abcdef.parquet"
Craft = Callable[[Path, Path], None]
"""Edits the dataset (first argument) to reach the guard folder (second)."""


def _shard_path(raw: dict, path: str) -> None:
    raw["shards"][0]["path"] = path


def _link(name: str, target: str = "important.txt") -> Craft:
    def craft(data: Path, guard: Path) -> None:
        path = data / name
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, guard / "victimdir" / "copy", dirs_exist_ok=True)
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
        path.symlink_to(guard / target)
    return craft


def _fifo(name: str) -> Craft:
    def craft(data: Path, guard: Path) -> None:
        if os.path.lexists(data / name):
            (data / name).unlink()
        os.mkfifo(data / name)
    return craft


def _listed(data: Path, table: str = "steps") -> str:
    return load_manifest(data).listed(table)[0].path


def _listed_shard_link(data: Path, guard: Path) -> None:
    rel = _listed(data)
    shutil.copy(data / rel, guard / "victimdir" / "shard.parquet")  # same bytes, outside
    (data / rel).unlink()
    (data / rel).symlink_to(guard / "victimdir" / "shard.parquet")


def _table_folder_link(data: Path, guard: Path) -> None:
    shutil.copytree(data / "steps", guard / "victimdir" / "steps")  # the listed shards, outside
    shutil.rmtree(data / "steps")
    (data / "steps").symlink_to(guard / "victimdir" / "steps")


def _quarantined_link(data: Path, guard: Path) -> None:
    (data / QUARANTINE).mkdir()
    (data / QUARANTINE / "20260101T000000").symlink_to(guard / "victimdir")


def _undecodable(data: Path, guard: Path) -> None:
    for folder in (b"", b"/steps"):
        with open(os.fsencode(data) + folder + b"/part-\xff-00001.parquet", "wb") as f:
            f.write(b"?")
    os.mkdir(os.fsencode(data) + b"/\xfe-folder")


CRAFTS: dict[str, Craft] = {
    "shard path ../": lambda d, g: edit_manifest(d, lambda raw: _shard_path(
        raw, "../guard/important.txt")),
    "shard path absolute": lambda d, g: edit_manifest(d, lambda raw: _shard_path(
        raw, str(g / "important.txt"))),
    "shard path through ..": lambda d, g: edit_manifest(d, lambda raw: _shard_path(
        raw, "steps/../../guard/important.txt")),
    "abandoned path ../": lambda d, g: edit_manifest(d, lambda raw: raw.update(
        abandoned=["../guard/important.txt"])),
    "run id ../": lambda d, g: edit_manifest(d, lambda raw: raw["runs"].update(
        {"../guard/victimdir": raw["runs"][RUN]})),
    "manifest is a link": _link(MANIFEST),
    "marker is a link": _link("_taskfactory"),
    "lock is a link": _link(".lock"),
    "temp name is a link": _link("._manifest.json.tmp"),
    "shard temp name is a link": _link(f"steps/.{SHARD}.tmp"),
    "unlisted shard is a link": _link(f"steps/{SHARD}"),
    "listed shard is a link": _listed_shard_link,
    "table folder is a link": _table_folder_link,
    "quarantine is a link": _link(QUARANTINE, "victimdir"),
    "quarantined folder is a link": _quarantined_link,
    "plots is a link": _link("plots", "victimdir"),
    "manifest is a FIFO": _fifo(MANIFEST),
    "marker is a FIFO": _fifo("_taskfactory"),
    "lock is a FIFO": _fifo(".lock"),
    "unlisted shard is a FIFO": _fifo(f"steps/{SHARD}"),
    "listed shard is a FIFO": lambda d, g: _fifo(_listed(d))(d, g),
    "shard listed twice": lambda d, g: edit_manifest(d, lambda raw: raw["shards"].append(
        dict(raw["shards"][0]))),
    "newer format": lambda d, g: edit_manifest(d, lambda raw: raw.update(format=99)),
    "newer schema": lambda d, g: edit_manifest(d, lambda raw: raw.update(schema_version=99)),
    "names not UTF-8": _undecodable,
}
COMMANDS = {
    "query": ["query", "select (select count(*) from attempts), (select count(*) from steps)"],
    "stats": ["stats"],
    "card": ["card"],
    "vacuum": ["vacuum", "--older-than", "0s", "--quarantine"],
    "repair": ["repair"],
    "export sft": ["export", "sft", "--out", "{out}/sft.jsonl"],
    "export harbor": ["export", "harbor", "--out", "{out}/harbor"],
    "export atif": ["export", "atif", "--out", "{out}/atif"],
    "import atif": ["import", "atif", "{out}/trials"],
}


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("crafted") / "data", complete=False)


def check_outcome(code: int, err: str) -> None:
    """No traceback; 0 or 3 with ``warning:`` lines only, or 2 with one error line last."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    if code == 2:  # the bad shards a reader left out, then why it stopped
        assert lines[-1].startswith("taskfactory: error:"), err
        lines = lines[:-1]
    else:
        assert code in (0, 3), (code, err)
    assert all(line.startswith("warning:") for line in lines), err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("craft", CRAFTS)
def test_a_crafted_dataset_stays_in_its_folder(original, tmp_path, craft, command):
    data, out = tmp_path / "data", tmp_path / "out"
    shutil.copytree(original, data, symlinks=True)
    out.mkdir()
    guard = Guard(tmp_path / "guard")
    CRAFTS[craft](data, guard.root)
    guard.settle()
    argv = [a.format(out=out) for a in COMMANDS[command]]
    code, _, err = cli(*argv, "--data", data)
    check_outcome(code, err)
    assert guard.changes() == {}
    assert sorted(os.listdir(tmp_path)) == ["data", "guard", "out"]
    if not command.startswith("export"):
        assert os.listdir(out) == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("craft", ["shard path ../", "listed shard is a FIFO",
                                   "table folder is a link", "manifest is a link"])
def test_after_repair_every_reader_answers(original, tmp_path, craft):
    """Repair leaves a dataset readers accept (what it cannot fix it names, and leaves)."""
    data = tmp_path / "data"
    shutil.copytree(original, data, symlinks=True)
    guard = Guard(tmp_path / "guard")
    CRAFTS[craft](data, guard.root)
    guard.settle()
    code, out, err = cli("repair", "--data", data)
    check_outcome(code, err)
    assert code == 0, out
    for argv in (COMMANDS["query"], COMMANDS["stats"]):
        code, _, err = cli(*argv, "--data", data)
        check_outcome(code, err)
        assert code == 0, err
    assert guard.changes() == {}
    assert json.loads((data / MANIFEST).read_text())["format"] == 3
