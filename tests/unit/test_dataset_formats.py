"""Formats a dataset can hold that this code did not write: a newer manifest format,
a shard listed twice, unlisted links, FIFOs and names that are not UTF-8, numbers and
nesting no manifest has, and a ``.lock`` that is a folder.  Each gives one line (exit 2,
or 3 when a reader answered without a shard), never a traceback, and ``repair`` fixes
what it can and says what it leaves.

Every dataset is real (:mod:`tests.support.small_dataset`: the real shard writer); its
run is left unfinished, so ``repair`` never needs a flow: lost candidates are left to
``run --resume``.  A FIFO could hang a reader, so those cases run the CLI as a
subprocess with a timeout.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.dataset.store.commits import QUARANTINE
from tasks.dataset.store.manifest import MANIFEST, load_manifest
from tests.support.crafted import Guard, cli, edit_manifest, one_line
from tests.support.small_dataset import RUN, build

COUNT = "select count(*) from attempts"


@pytest.fixture
def data(tmp_path) -> Path:
    return build(tmp_path / "data", complete=False)


def answer(data: Path) -> tuple[int, str, str]:
    return cli("query", COUNT, "--data", data, "--format", "csv")


def test_a_newer_manifest_format_is_refused_and_never_rewritten(data):
    edit_manifest(data, lambda raw: raw.update(format=4, lineage={"from": "a newer writer"}))
    before = (data / MANIFEST).read_bytes()
    for argv in (["query", COUNT], ["stats"], ["vacuum", "--older-than", "0s"], ["repair"],
                 ["card"], ["run", "--backend", "local"]):
        code, _, err = cli(*argv, "--data", data)
        assert code == 2 and "manifest format 4" in one_line(err), argv
        assert "upgrade taskfactory" in err
    assert (data / MANIFEST).read_bytes() == before
    assert not (data / QUARANTINE).exists()


def test_a_shard_listed_twice_is_read_once_and_repair_keeps_one_entry(data):
    edit_manifest(data, lambda raw: raw["shards"].append(dict(raw["shards"][0])))
    code, out, err = answer(data)
    assert (code, out.split()) == (3, ["count_star()", "6"])  # not 8: c000, c001 once
    assert "more than once" in err and "taskfactory repair" in err
    assert cli("vacuum", "--data", data, "--older-than", "0s")[0] == 2  # writers refuse
    code, out, _ = cli("repair", "--data", data)
    assert code == 0 and "was listed twice" in out
    assert answer(data)[:2] == (0, "count_star()\n6\n")
    assert len({s.path for s in load_manifest(data).shards}) == len(load_manifest(data).shards)


def run_cli(*argv: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=120)


def test_a_listed_shard_that_is_a_fifo_never_blocks_a_reader(data):
    shard = data / load_manifest(data).listed("steps")[0].path
    shard.unlink()
    os.mkfifo(shard)
    proc = run_cli("query", "select count(*) from steps", "--data", data, "--format", "csv")
    assert proc.returncode == 3 and proc.stdout.split() == ["count_star()", "8"]
    assert "(a FIFO, never followed)" in proc.stderr
    proc = run_cli("repair", "--data", data)
    assert proc.returncode == 0, proc.stderr
    assert (data / QUARANTINE).is_dir() and not os.path.lexists(shard)  # moved, not opened
    assert run_cli("query", COUNT, "--data", data).returncode == 0


def test_unlisted_links_fifos_and_undecodable_names_are_reported_and_break_no_run(
        data, tmp_path):
    guard = Guard(tmp_path / "guard")
    folder = data / "steps"
    (folder / f"part-{RUN}-00090.0123456789abcdef.parquet").symlink_to(
        guard.root / "important.txt")
    os.mkfifo(folder / f"part-{RUN}-00091.0123456789abcdef.parquet")
    with open(os.fsencode(folder) + b"/part-\xff-00001.parquet", "wb") as f:
        f.write(b"?")
    guard.settle()
    assert answer(data)[:2] == (0, "count_star()\n6\n")
    with_abandoned = cli("vacuum", "--data", data, "--older-than", "0s")  # saves the manifest
    assert with_abandoned[0] == 0, with_abandoned
    assert answer(data)[0] == 0
    code, out, _ = cli("repair", "--data", data)
    assert code == 0, out
    assert "00090.0123456789abcdef.parquet is a symbolic link" in out
    assert "00091.0123456789abcdef.parquet is a FIFO" in out
    assert "part-\\xff-00001.parquet is a name that is not valid UTF-8" in out
    assert guard.changes() == {}
    assert json.loads((data / MANIFEST).read_text())["abandoned"] == []


NUMBERS_AND_NESTING = {
    "huge schema version": lambda raw: raw.update(schema_version=float("inf")),
    "deep nesting": lambda raw: raw["runs"][RUN].update(settings="DEEP"),
    "negative rows": lambda raw: raw["shards"][0].update(rows=-1),
    "huge commit": lambda raw: raw["shards"][0].update(commit=10**30),
    "unknown field": lambda raw: raw.update(extra=1),
    "run id with a slash": lambda raw: raw["runs"].update({"../x": raw["runs"][RUN]}),
}


def write_raw(data: Path, edit) -> None:
    """The manifest's JSON edited; ``Infinity`` written as 1e400, ``"DEEP"`` as objects
    nested 5,000 levels deep (more than JSON libraries parse)."""
    raw = json.loads((data / MANIFEST).read_text())
    edit(raw)
    text = json.dumps(raw).replace("Infinity", "1e400")
    (data / MANIFEST).write_text(text.replace('"DEEP"', '{"k": ' * 5000 + "1" + "}" * 5000))


@pytest.mark.parametrize("case", NUMBERS_AND_NESTING)
def test_numbers_and_nesting_no_manifest_has_are_one_line_and_repaired(data, case):
    rows = load_manifest(data).shards
    write_raw(data, NUMBERS_AND_NESTING[case])
    for argv in (["query", COUNT], ["stats"], ["vacuum", "--older-than", "0s"]):
        code, _, err = cli(*argv, "--data", data)
        assert code == 2 and "not a readable manifest" in one_line(err), (argv, err)
    code, out, err = cli("repair", "--data", data)
    assert code == 0, out + err
    assert load_manifest(data).shards == rows and answer(data)[0] == 0


def test_a_lock_that_is_a_folder_or_a_link_is_one_line(data, tmp_path):
    (data / ".lock").unlink()
    (data / ".lock").mkdir()
    for argv in (["vacuum", "--older-than", "0s"], ["repair"], ["card"]):
        code, _, err = cli(*argv, "--data", data)
        assert code == 2 and ".lock is a folder" in one_line(err), argv
    (data / ".lock").rmdir()
    (data / ".lock").symlink_to(tmp_path / "elsewhere")
    code, _, err = cli("vacuum", "--older-than", "0s", "--data", data)
    assert code == 2 and ".lock is a symbolic link" in one_line(err)
    assert not (tmp_path / "elsewhere").exists()
