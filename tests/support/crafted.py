"""Crafted datasets and the guard folder that shows a command stayed inside its folders.

The guard is a folder beside the dataset (and beside ``--out``) that crafted paths and
symlinks point into.  :meth:`Guard.state` records every entry's listing, type, size,
mtime, content (sha256, or a symlink's target) *and* access time: the guard's entries
are "armed" with an access time two days before their mtime, so that under ``relatime``
(the root filesystem here) the next read of a file or listing of a folder updates it.
Equal states before and after a command: nothing in the guard was read, written,
listed or deleted.

Crafting helpers edit a real dataset as an attacker would: rewrite a listed shard and
fix up the manifest's sha256, bytes and rows, or edit the manifest's JSON.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from flows.cli import main
from tasks.dataset.store.manifest import MANIFEST

TWO_DAYS_NS = 2 * 86400 * 10**9


class Guard:
    """A folder of things a dataset must never reach: a file, a folder with a file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "victimdir").mkdir(parents=True)
        (root / "important.txt").write_text("the user's own file\n")
        (root / "victimdir" / "keep.txt").write_text("keep me\n")
        (root / "README.md").write_text("# the user's own README\n")
        self._paths: list[str] = []
        self.before: dict[str, tuple] = {}
        self.settle()

    def _walk(self) -> list[str]:
        found = [""]
        for folder, dirs, files in os.walk(self.root):
            rel = os.path.relpath(folder, self.root)
            found += [os.path.normpath(os.path.join(rel, n)) for n in sorted(dirs + files)]
        return found

    def _arm(self) -> None:
        for rel in self._paths:
            path = self.root / rel
            st = path.lstat()
            os.utime(path, ns=(st.st_mtime_ns - TWO_DAYS_NS, st.st_mtime_ns),
                     follow_symlinks=False)

    def state(self) -> dict[str, tuple]:
        """Every entry: (mode, size, mtime, atime, content digest); the root's listing too."""
        atimes = {rel: (self.root / rel).lstat().st_atime_ns for rel in self._paths
                  if os.path.lexists(self.root / rel)}
        found: dict[str, tuple] = {}
        for rel in self._walk():
            path = self.root / rel
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                digest = os.readlink(path)
            else:
                digest = ""
            found[rel] = (st.st_mode, st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                          st.st_mtime_ns, atimes.get(rel), digest)
        self._paths = list(found)
        self._arm()
        return {rel: (*v[:3], (self.root / rel).lstat().st_atime_ns if v[3] is None else v[3],
                      v[4]) for rel, v in found.items()}

    @staticmethod
    def digest(folder: Path) -> dict[str, str]:
        """sha256 of every regular file below ``folder``, by relative path."""
        return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}

    def settle(self) -> None:
        """Take the guard's state as it is now (after a test added to it) as :attr:`before`."""
        self.state()  # arms what was added
        self.before = self.state()

    def changes(self, listed: bool = False) -> dict[str, tuple]:
        """Entry -> (before, after) of every entry that differs from :attr:`before`;
        ``listed``: the guard was named as ``--data``, so the listing of its root (its
        access time) may be read to see that it is not empty."""
        after = self.state()
        if listed:
            after[""] = (*after[""][:3], self.before[""][3], after[""][4])
        return {k: (self.before.get(k), after.get(k)) for k in sorted({*after, *self.before})
                if self.before.get(k) != after.get(k)}

    def untouched(self) -> bool:
        return not self.changes()


def cli(*argv: object) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``taskfactory`` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's --help and the like
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The single ``taskfactory: error:`` line of a refused command."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskfactory: error:"), err
    return lines[0]


def edit_manifest(data: Path, edit: Callable[[dict], object]) -> None:
    """Apply ``edit`` to the manifest's JSON (in place) and write it back."""
    raw = json.loads((data / MANIFEST).read_text())
    edit(raw)
    (data / MANIFEST).write_text(json.dumps(raw, indent=1))


def entry_of(raw: dict, table: str) -> dict:
    return next(s for s in raw["shards"] if s["table"] == table)


def fix_up(raw: dict, entry: dict, blob: bytes, rows: int | None = None) -> None:
    """Make the manifest vouch for ``blob`` as ``entry``'s shard."""
    entry["sha256"] = hashlib.sha256(blob).hexdigest()
    entry["bytes"] = len(blob)
    if rows is not None:
        entry["rows"] = rows


def rewrite_shard(data: Path, table: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Replace the first listed ``table`` shard by ``change`` of its rows, checksums fixed."""
    raw = json.loads((data / MANIFEST).read_text())
    entry = entry_of(raw, table)
    path = data / entry["path"]
    rows = change(pq.read_table(path))
    sink = io.BytesIO()
    pq.write_table(rows, sink)
    path.write_bytes(sink.getvalue())
    fix_up(raw, entry, sink.getvalue(), rows.num_rows)
    (data / MANIFEST).write_text(json.dumps(raw, indent=1))


def set_column(rows: pa.Table, name: str, values: list) -> pa.Table:
    i = rows.schema.get_field_index(name)
    return rows.set_column(i, rows.schema.field(i), pa.array(values, rows.schema.field(i).type))
