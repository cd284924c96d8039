"""Ecosystem snapshots: the user ecosystem folders a run used, kept inside the dataset.

``<data>/ecosystems/<name>-<digest>/`` holds a copy of the folder of ecosystem ``name``
whose digest (``Ecosystem.digest``, the part after ``+`` in ``tasks.ecosystem_version``)
is ``digest``: content-addressed, so a run that used the same folder finds it there and
writes nothing, and an edited folder gets a snapshot of its own.  Built-in ecosystems are
never copied (the project holds them).

- **Written atomically**: the copy is made in ``ecosystems/.<name>-<digest>.tmp-<pid>``
  (its files fsynced) and renamed into place; a killed run leaves only the temp folder,
  which ``vacuum`` deletes.  What is copied: the folder's regular files and real
  folders, at most :data:`MAX_BYTES` in all; links, special files, hidden folders and
  ``__pycache__`` are left out (the loader never reads through a link).
- **Read like the rest of the dataset**: :func:`snapshot_folder` returns a snapshot only
  when its name is ``<plain name>-<16 hex digits>`` and every entry below it, the way
  there included, is a regular file or a real folder; a link or special file anywhere is
  :class:`~tasks.dataset.store.errors.OutsideError`, never followed.  Its code is loaded
  like any user folder (sandboxed unless ``--trust-ecosystem``); the loader that reads it
  checks that its digest is still the one its name says.
- **Kept while referenced**: ``vacuum`` deletes a snapshot no listed ``tasks`` row
  references (:func:`referenced`), and temp folders, after the retention window.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

from tasks.dataset.store.errors import OutsideError, StorageError
from tasks.dataset.store.manifest import Manifest
from tasks.dataset.store.paths import (
    check_name,
    create,
    folder_if_real,
    is_name,
    kind,
    odd_entries,
    open_file,
    real_folder,
    writing,
)

FOLDER = "ecosystems"
MAX_BYTES = 64 << 20
"""A snapshot's files in all: an ecosystem folder is code and small data."""
_SNAPSHOT = re.compile(r"^(?P<name>.+)-(?P<digest>[0-9a-f]{16})$")
_SKIPPED = ("__pycache__",)


def snapshot_name(name: str, digest: str) -> str | None:
    """``<name>-<digest>`` when ``name`` is a plain name and ``digest`` 16 hex digits
    (what a ``tasks`` row may reference), else None (a crafted row references none)."""
    try:
        check_name(name)
    except ValueError:
        return None
    text = f"{name}-{digest}"
    return text if _SNAPSHOT.match(text) and len(text.encode()) <= 255 else None


def digest_of(version: str) -> str:
    """The ecosystem digest in a ``tasks.ecosystem_version`` (``<version>+<digest>``)."""
    return version.rpartition("+")[2]


def _files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of the regular files below ``folder`` a snapshot keeps."""
    for root, dirs, names in os.walk(folder):  # never descends into a link
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED
                         and not os.path.islink(os.path.join(root, d)))
        for name in sorted(names):
            path = Path(root, name)
            if stat.S_ISREG(path.lstat().st_mode):
                yield path.relative_to(folder).as_posix(), path


def store_snapshot(data: Path, name: str, digest: str, folder: Path) -> bool:
    """Copy the ecosystem ``folder`` to ``<data>/ecosystems/<name>-<digest>/`` unless a
    snapshot is there already; True when one was written.  The caller holds the writer
    lock.  StorageError when the folder holds more than :data:`MAX_BYTES` or the disk
    refuses; OutsideError when a link or file stands where a folder belongs."""
    final = snapshot_name(name, digest)
    if final is None:
        raise ValueError(f"ecosystem {name!r} digest {digest!r}: not a snapshot name")
    base = real_folder(data, FOLDER, create=True)
    assert base is not None
    if real_folder(base, final) is not None:  # OutsideError for a link or file there
        return False
    files = list(_files(folder))
    total = sum(path.lstat().st_size for _, path in files)
    if total > MAX_BYTES:
        raise StorageError(f"ecosystem folder {folder} holds {total >> 20} MiB, more than the "
                           f"{MAX_BYTES >> 20} MiB a dataset keeps of it; move data the "
                           "ecosystem does not need out of the folder")
    with writing(base):
        tmp = Path(tempfile.mkdtemp(dir=base, prefix=f".{final}.tmp-"))
        tmp.chmod(0o755)  # the sandbox reads it as nobody
    for rel, path in files:
        parent = real_folder(tmp, rel.rpartition("/")[0], create=True) if "/" in rel else tmp
        assert parent is not None
        with writing(path):
            content = path.read_bytes()
        create(parent / rel.rpartition("/")[2], content, exclusive=True)
    with writing(base / final):
        os.rename(tmp, base / final)
    return True


def snapshot_folder(data: Path, name: str, version: str) -> Path | None:
    """The snapshot a ``tasks`` row of ecosystem ``name`` and ``ecosystem_version`` references,
    or None when there is none (or the row cannot reference one).  OutsideError naming
    the entry when a link or special file stands on the way or anywhere below it."""
    snap = snapshot_name(name, digest_of(version))
    found = real_folder(data, f"{FOLDER}/{snap}") if snap is not None else None
    if found is None:
        return None
    for root, dirs, names in os.walk(found):
        for entry in (*dirs, *names):
            mode = Path(root, entry).lstat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise OutsideError(f"{Path(root, entry)} is a {kind(mode)} in an ecosystem "
                                   "snapshot, never followed; the dataset was changed or "
                                   "crafted: remove the snapshot and pass the folder with "
                                   "--ecosystem-dir")
    return found


def snapshots(data: Path) -> list[str]:
    """Names of the entries of ``<data>/ecosystems/`` that are real folders named like a
    snapshot (temp folders and anything else left out)."""
    base = folder_if_real(data, FOLDER)
    if base is None:
        return []
    with os.scandir(base) as entries:
        return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)
                      and _SNAPSHOT.match(e.name) and not e.name.startswith("."))


def temp_folders(data: Path) -> list[str]:
    """Names of the temp folders a killed run left in ``<data>/ecosystems/``."""
    base = folder_if_real(data, FOLDER)
    if base is None:
        return []
    with os.scandir(base) as entries:
        return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)
                      and e.name.startswith(".") and ".tmp-" in e.name)


def referenced(data: Path, manifest: Manifest) -> set[str]:
    """The snapshot names the listed ``tasks`` shards' rows reference (the caller checked
    the shards' checksums)."""
    found: set[str] = set()
    for entry in manifest.listed("tasks"):
        with open_file(data, entry.path) as f:
            table = pq.read_table(f, columns=["ecosystem", "ecosystem_version"])
        for name, version in zip(*(c.to_pylist() for c in table.columns), strict=True):
            snap = snapshot_name(name, digest_of(version))
            if snap is not None:
                found.add(snap)
    return found


def odd_snapshot_entries(data: Path) -> list[tuple[str, str]]:
    """(path, what it is) of each entry of ``<data>/ecosystems/`` and of the snapshots in
    it that is not a regular file or a real folder (or whose name is not UTF-8), for
    ``repair`` to report: a reader refuses such a snapshot, nothing follows it."""
    base = folder_if_real(data, FOLDER)
    if base is None:
        return []
    found = [(f"{FOLDER}/{name}", why) for name, why in odd_entries(base)]
    for snap in snapshots(data):
        for root, dirs, _ in os.walk(base / snap):
            rel = Path(root).relative_to(data).as_posix()
            found += [(f"{rel}/{name}", why) for name, why in odd_entries(Path(root))]
            dirs[:] = [d for d in dirs if is_name(d)]
    return found
