"""A read-only dataset folder: readers answer, every writer stops with one line (exit 2)
before it changes a byte.  The folder is a real read-only tmpfs the test mounts
(:mod:`tests.support.small_disk`, root only)."""

import os

from tests.support.crafted import cli, one_line
from tests.support.small_dataset import build
from tests.support.small_disk import remount, small_disk


def files(folder) -> dict:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_read_only_dataset_is_read_and_never_written(tmp_path):
    with small_disk(tmp_path / "disk", "4m") as disk:
        data = build(disk / "data", complete=False)
        (data / "._manifest.json.tmp").write_bytes(b"{")  # what a vacuum would delete
        os.utime(data / "._manifest.json.tmp", (0, 0))
        remount(disk, "ro")
        before = files(data)
        code, out, _ = cli("query", "select count(*) from attempts", "--data", data)
        assert code == 0 and "6" in out
        for argv in (["vacuum", "--older-than", "0s"], ["repair"], ["card"],
                     ["run", "--backend", "local", "--ecosystem", "files"]):
            code, _, err = cli(*argv, "--data", data)
            assert code == 2 and "Read-only file system" in one_line(err), argv
        assert files(data) == before
