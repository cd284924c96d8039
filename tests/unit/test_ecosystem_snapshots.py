"""Ecosystem snapshots in a dataset (:mod:`tasks.dataset.store.snapshots`): written once,
atomically, without links; a crafted snapshot is refused without following anything; and
``vacuum`` keeps the snapshots accepted tasks reference, deletes the rest.  Real files, a
real dataset (one accepted task of the built-in ``files`` ecosystem made on the local
backend, its row then made to reference a user ecosystem), the CLI in this process."""

import os
import shutil
from pathlib import Path

import pytest

from tasks.dataset.store import snapshots
from tasks.dataset.store.errors import OutsideError, StorageError
from tasks.dataset.store.snapshots import (
    FOLDER,
    snapshot_folder,
    snapshot_name,
    store_snapshot,
)
from tests.support.crafted import cli, rewrite_shard, set_column
from tests.support.small_dataset import build

DIGEST = "0123456789abcdef"
OTHER = "fedcba9876543210"
VERSION = f"1+{DIGEST}"


@pytest.fixture
def eco(tmp_path) -> Path:
    """A user ecosystem folder with what a snapshot keeps and what it leaves out."""
    folder = tmp_path / "eco"
    (folder / "data").mkdir(parents=True)
    (folder / "ecosystem.yaml").write_text("name: inv\n")
    (folder / "seed.py").write_text("def generate(seed): return {}\n")
    (folder / "data" / "words.txt").write_text("bolt\nnut\n")
    (folder / ".hidden.py").write_text("# kept: the digest covers it\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "seed.pyc").write_bytes(b"\0")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref")
    (folder / "outside.txt").symlink_to("/etc/hostname")
    return folder


@pytest.fixture
def data(tmp_path) -> Path:
    """A small real dataset (no tasks)."""
    return build(tmp_path / "data")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_snapshot_is_the_folder_without_links_written_once(data, eco):
    assert store_snapshot(data, "inv", DIGEST, eco) is True
    snap = data / FOLDER / f"inv-{DIGEST}"
    assert _tree(snap) == {"ecosystem.yaml": b"name: inv\n",
                           "seed.py": b"def generate(seed): return {}\n",
                           "data/words.txt": b"bolt\nnut\n",
                           ".hidden.py": b"# kept: the digest covers it\n"}
    assert os.listdir(data / FOLDER) == [f"inv-{DIGEST}"]  # no temp folder left
    assert snap.stat().st_mode & 0o005 == 0o005  # the sandbox reads it as nobody
    (eco / "seed.py").write_text("edited")
    assert store_snapshot(data, "inv", DIGEST, eco) is False  # content-addressed: kept
    assert (snap / "seed.py").read_text().startswith("def generate")
    assert snapshot_folder(data, "inv", VERSION) == snap


def test_a_folder_too_large_is_refused_and_nothing_is_left(data, eco, monkeypatch):
    monkeypatch.setattr(snapshots, "MAX_BYTES", 10)
    with pytest.raises(StorageError, match="more than the 0 MiB a dataset keeps"):
        store_snapshot(data, "inv", DIGEST, eco)
    assert os.listdir(data / FOLDER) == []


@pytest.mark.parametrize("version", ["1+../../guard", "1+ABCDEF0123456789", "1", "1+"])
def test_a_version_that_names_no_digest_references_no_snapshot(data, eco, version):
    store_snapshot(data, "inv", DIGEST, eco)
    assert snapshot_folder(data, "inv", version) is None
    assert snapshot_name("../x", DIGEST) is None and snapshot_name("inv", "../x") is None


@pytest.mark.parametrize("craft", ["folder is a link", "snapshot is a link", "link inside",
                                   "fifo inside"])
def test_a_crafted_snapshot_is_refused_and_nothing_followed(data, eco, guard, craft):
    (guard.root / "inv").mkdir()
    (guard.root / "inv" / "ecosystem.yaml").write_text("name: inv\n")
    store_snapshot(data, "inv", DIGEST, eco)
    snap = data / FOLDER / f"inv-{DIGEST}"
    if craft == "folder is a link":
        shutil.rmtree(data / FOLDER)
        (data / FOLDER).symlink_to(guard.root)
        (guard.root / f"inv-{DIGEST}").mkdir()
    elif craft == "snapshot is a link":
        shutil.rmtree(snap)
        snap.symlink_to(guard.root / "inv")
    elif craft == "link inside":
        (snap / "seed.py").unlink()
        (snap / "seed.py").symlink_to(guard.root / "inv" / "ecosystem.yaml")
    else:
        os.mkfifo(snap / "data" / "pipe")
    guard.settle()
    with pytest.raises(OutsideError, match="never followed"):
        snapshot_folder(data, "inv", VERSION)
    if craft.endswith("is a link"):  # a run never writes through it either
        with pytest.raises(OutsideError):
            store_snapshot(data, "inv", DIGEST, eco)
    else:
        assert store_snapshot(data, "inv", DIGEST, eco) is False
    assert guard.changes() == {}
    code, out, _ = cli("repair", "--data", data)
    named = {"folder is a link": f"{FOLDER} is a symbolic link",
             "snapshot is a link": f"{FOLDER}/inv-{DIGEST} is a symbolic link",
             "link inside": f"{FOLDER}/inv-{DIGEST}/seed.py is a symbolic link",
             "fifo inside": f"{FOLDER}/inv-{DIGEST}/data/pipe is a FIFO"}[craft]
    assert code == 0 and named in out, out


@pytest.fixture(scope="module")
def task_dataset(tmp_path_factory) -> Path:
    """One accepted task whose row says it was made with user ecosystem ``inv`` at
    ``VERSION``."""
    from environments.local.config import LocalConfig
    from tests.support.dataset import write_outcomes
    from tests.support.harbor_data import accepted

    data = tmp_path_factory.mktemp("tasks") / "data"
    write_outcomes(data, "utest-snapshots", accepted(["files"], LocalConfig(), 1,
                                                     f"utest-snapshots-{os.getpid()}"))
    rewrite_shard(data, "tasks", lambda rows: set_column(
        set_column(rows, "ecosystem", ["inv"]), "ecosystem_version", [VERSION]))
    return data


def test_vacuum_keeps_referenced_snapshots_and_deletes_the_rest(task_dataset, tmp_path, eco,
                                                                guard):
    data = tmp_path / "data"
    shutil.copytree(task_dataset, data)
    store_snapshot(data, "inv", DIGEST, eco)
    store_snapshot(data, "inv", OTHER, eco)  # an edited folder's, no task references it
    (data / FOLDER / f".inv-{OTHER}.tmp-x").mkdir()  # a killed run's copy
    (data / FOLDER / f"inv-{'1' * 16}").symlink_to(guard.root)
    guard.settle()
    code, out, err = cli("vacuum", "--data", data, "--older-than", "0s", "--dry-run")
    assert code == 0, err
    assert sorted(os.listdir(data / FOLDER)) == sorted(
        [f".inv-{OTHER}.tmp-x", f"inv-{'1' * 16}", f"inv-{DIGEST}", f"inv-{OTHER}"])
    assert "unreferenced ecosystem snapshot" in out
    assert cli("vacuum", "--data", data, "--older-than", "0s")[0] == 0
    assert sorted(os.listdir(data / FOLDER)) == [f"inv-{DIGEST}", f"inv-{'1' * 16}"]
    assert guard.changes() == {}
    code, out, _ = cli("repair", "--data", data)
    assert code == 0 and f"{FOLDER}/inv-{'1' * 16} is a symbolic link" in out


def test_vacuum_keeps_what_the_retention_window_protects(task_dataset, tmp_path, eco):
    data = tmp_path / "data"
    shutil.copytree(task_dataset, data)
    store_snapshot(data, "inv", OTHER, eco)
    assert cli("vacuum", "--data", data, "--older-than", "1h")[0] == 0
    assert os.listdir(data / FOLDER) == [f"inv-{OTHER}"]


def test_an_export_loads_the_snapshot_of_the_tasks_version_and_refuses_a_changed_one(data):
    """The inventory fixture's code (trusted in unit tests: it runs on this host)."""
    from types import SimpleNamespace

    from environments.ecosystems import load_ecosystem
    from tasks.exports.harbor import HarborError
    from tasks.exports.harbor.source import load_ecosystems

    folder = Path("tests/fixtures/ecosystems/inventory")
    digest = load_ecosystem(str(folder)).digest
    store_snapshot(data, "inventory", digest, folder)
    row = SimpleNamespace(ecosystem="inventory", ecosystem_version=f"1+{digest}")
    (eco,) = load_ecosystems([row], [], data).values()
    assert eco.folder == (data / FOLDER / f"inventory-{digest}").resolve()
    assert eco.digest == digest
    seed = data / FOLDER / f"inventory-{digest}" / "seed.py"
    seed.write_text(seed.read_text() + "\n# changed\n")
    with pytest.raises(HarborError, match="not what its name says: it was changed or crafted"):
        load_ecosystems([row], [], data)
