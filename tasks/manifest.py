"""The dataset manifest: the commit log of a dataset folder.

``<data>/_manifest.json`` lists every committed shard (table, path, rows, bytes, sha256,
run id, schema version) and every run's state (``running`` until its last shard and its
``runs`` row are committed, then ``complete``; ``failed``, with the reason, when the flow
raised).  Protocol:

1. a shard is written to a hidden temp name, fsynced and renamed into place;
2. the manifest is rewritten atomically (temp, fsync, rename, fsync the folder) *after*
   the shards it adds, so a shard is committed exactly when the manifest lists it;
3. readers trust only listed shards; a writer opening the dataset deletes shard files
   the manifest does not list (orphans of a writer killed between steps 1 and 2) and
   leftover temp files, so an orphan is never counted and never collides with a new name.

One writer at a time: :func:`open_for_writing` takes an exclusive POSIX record lock on
``<data>/.lock``.  The kernel releases it when the process dies, even by SIGKILL, and,
unlike ``flock``, a forked child does not share it: a sandbox child caught between fork
and exec when its parent is killed cannot keep the dataset locked.  POSIX locks do not
exclude the owning process itself, so an in-process registry does that.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from schemas.records import SCHEMA_VERSION, TABLES

MANIFEST = "_manifest.json"
LOCK = ".lock"
FORMAT = 2


class DatasetError(Exception):
    """A dataset that cannot be used as asked; the message names the problem and the fix."""


class ShardEntry(BaseModel):
    table: str
    path: str
    """Relative to the dataset folder."""
    rows: int
    sha256: str
    run_id: str
    bytes: int | None = None
    """None only in manifests written by schema version 1."""
    schema_version: int = 1


class RunEntry(BaseModel):
    config_hash: str
    settings: dict
    started_at: str
    status: Literal["running", "complete", "failed"] = "running"
    """``running`` also after a kill; ``failed`` when the flow raised.  Both can be resumed."""
    reason: str | None = None
    """Why a ``failed`` run stopped: the exception's type and message."""
    resumes: int = 0
    flow_run_ids: list[str] = []


class Manifest(BaseModel):
    format: int = FORMAT
    schema_version: int = SCHEMA_VERSION
    shards: list[ShardEntry] = []
    runs: dict[str, RunEntry] = {}

    def listed(self, table: str) -> list[ShardEntry]:
        return [s for s in self.shards if s.table == table]

    def next_seq(self, run_id: str) -> int:
        """One more than the highest shard sequence number of ``run_id``."""
        seqs = [int(Path(s.path).stem.rsplit("-", 1)[1]) for s in self.shards
                if s.run_id == run_id]
        return max(seqs, default=0) + 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def load_manifest(data_dir: Path) -> Manifest:
    """The manifest of ``data_dir`` (empty when there is none).

    Raises DatasetError for an unreadable manifest or one of a newer schema version."""
    path = data_dir / MANIFEST
    if not path.exists():
        return Manifest()
    try:
        raw = json.loads(path.read_text())
        version = int(raw.get("schema_version", 1))
        if raw.get("format", 1) == 1:  # schema version 1: no bytes, one version for all
            raw = {"format": FORMAT, "schema_version": version, "runs": {},
                   "shards": [{**s, "schema_version": version} for s in raw["shards"]]}
        manifest = Manifest.model_validate(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path} is not a readable manifest ({exc}); restore it from a "
                           "backup or start a new dataset folder") from None
    newest = max([manifest.schema_version, *(s.schema_version for s in manifest.shards)])
    if newest > SCHEMA_VERSION:
        raise DatasetError(f"{data_dir} holds schema version {newest}; this taskfactory reads "
                           f"versions 1 to {SCHEMA_VERSION}; upgrade taskfactory")
    return manifest


def save_manifest(data_dir: Path, manifest: Manifest) -> None:
    manifest.schema_version = max([SCHEMA_VERSION, *(s.schema_version for s in manifest.shards)])
    atomic_write(data_dir / MANIFEST, manifest.model_dump_json(indent=1).encode())


def shard_problem(data_dir: Path, entry: ShardEntry, checksum: bool) -> str | None:
    """Why a listed shard cannot be trusted (missing, wrong size, wrong sha256), or None.

    The size check is a ``stat``; ``checksum`` also hashes the file, and so does a shard
    listed without a size (manifests of schema version 1)."""
    path = data_dir / entry.path
    try:
        size = path.stat().st_size
    except OSError:
        return "missing"
    if entry.bytes is not None and size != entry.bytes:
        return f"{size} bytes, the manifest says {entry.bytes}"
    if checksum or entry.bytes is None:
        with open(path, "rb") as f:
            if hashlib.file_digest(f, "sha256").hexdigest() != entry.sha256:
                return "sha256 differs from the manifest"
    return None


def remove_orphans(data_dir: Path, manifest: Manifest) -> list[Path]:
    """Delete shard files that the manifest does not list and every temp file of an
    atomic write; returns them."""
    listed = {s.path for s in manifest.shards}
    removed = []
    for table in TABLES:
        folder = data_dir / table
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            rel = str(path.relative_to(data_dir))
            if path.is_file() and rel not in listed and (
                    path.suffix == ".parquet" or path.name.endswith(".tmp")):
                path.unlink()
                removed.append(path)
    for tmp in [*data_dir.glob(".*.tmp"), *data_dir.glob("*/.*.tmp")]:  # manifest, card, plots
        if tmp.exists():
            tmp.unlink()
            removed.append(tmp)
    return removed


_held: set[Path] = set()
"""Datasets this process has open for writing."""


def _try_lock(f, data_dir: Path) -> None:
    if data_dir.resolve() in _held:
        raise _lock_busy(data_dir)
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            raise _lock_busy(data_dir) from None
        raise


@contextlib.contextmanager
def open_for_writing(data_dir: Path) -> Iterator[tuple[Manifest, list[Path]]]:
    """Lock ``data_dir`` for this process, load its manifest and remove orphans; yields
    the manifest and the orphans removed.

    Raises DatasetError when another process holds the lock or the dataset is newer."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / LOCK, "a+") as lock:
        _try_lock(lock, data_dir)
        _held.add(data_dir.resolve())
        try:
            manifest = load_manifest(data_dir)
            yield manifest, remove_orphans(data_dir, manifest)
        finally:
            _held.discard(data_dir.resolve())


def _lock_busy(data_dir: Path) -> DatasetError:
    return DatasetError(f"another taskfactory process is writing to {data_dir}; wait for it "
                        "to finish or use another --data folder")


def check_unlocked(data_dir: Path) -> None:
    """Raise DatasetError when a live process holds ``data_dir``'s lock (creates nothing)."""
    if data_dir.resolve() in _held:  # opening and closing the file would drop our own lock
        raise _lock_busy(data_dir)
    if not (data_dir / LOCK).is_file():
        return
    with open(data_dir / LOCK, "a") as lock:
        _try_lock(lock, data_dir)
        fcntl.lockf(lock, fcntl.LOCK_UN)
