"""Shard integrity: every listed shard's size and sha256, checked before it is read, and
that it is a Parquet file with no column its table lacks (a shard of another table, or
one crafted with a matching sha256, is left out like a corrupt one).

Every reader (``query``, ``stats``, ``card``, the exports, ``check-harbor``, the factory)
and every writer goes through :func:`problems`, so no byte a manifest does not vouch for is
ever served.  A verdict is cached per process, keyed by the file's identity and state
(device, inode, size, mtime, ctime) and the expected sha256: a file that is rewritten gets
a new ctime and is hashed again; one that is not is hashed once however often it is opened
(the factory opens a dataset four times per run).  Files are hashed in a few threads:
hashlib releases the GIL while it digests.

The shards a reader of this process left out are remembered (:func:`take_excluded`), so
the CLI can end with its own exit code instead of 0.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from io import BufferedReader
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import arrow_schema
from schemas.records import TABLES
from tasks.dataset.store.errors import first_line
from tasks.dataset.store.manifest import REPAIR_HINT, DatasetError, Manifest, ShardEntry
from tasks.dataset.store.paths import NotAFile, open_file

HASH_THREADS = 4
_verdicts: dict[tuple, str | None] = {}
_excluded: dict[str, str] = {}
_lock = threading.Lock()


def _digest(f: BufferedReader, limit: int | None) -> str:
    """sha256 of the file's bytes, reading at most ``limit`` (all when None)."""
    if limit is None:
        return hashlib.file_digest(f, "sha256").hexdigest()
    h = hashlib.sha256()
    while limit > 0 and (chunk := f.read(min(limit, 1 << 20))):
        h.update(chunk)
        limit -= len(chunk)
    return h.hexdigest()


def sha256_of(data_dir: Path, rel: str) -> str:
    """sha256 of the regular file ``data_dir / rel`` (opened without following a link;
    OSError, :class:`tasks.dataset.store.paths.NotAFile` for a link or special file)."""
    with open_file(data_dir, rel) as f:
        return _digest(f, None)


def _check(data_dir: Path, entry: ShardEntry) -> tuple[tuple | None, str | None]:
    """(cache key, problem) of one shard; the key is None when there is nothing to cache.
    The shard is opened without following a link, and no more bytes are read than the
    manifest says it has."""
    try:
        with open_file(data_dir, entry.path) as f:
            st = os.fstat(f.fileno())
            if entry.bytes is not None and st.st_size != entry.bytes:
                return None, f"{st.st_size} bytes, the manifest says {entry.bytes}"
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                   entry.sha256)
            with _lock:
                if key in _verdicts:
                    return key, _verdicts[key]
            ok = _digest(f, st.st_size if entry.bytes is None else entry.bytes) == entry.sha256
            problem = _table_problem(f, entry.table) if ok else "sha256 differs from the manifest"
    except FileNotFoundError:
        return None, "missing"
    except NotAFile as exc:
        return None, str(exc.strerror)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    return key, problem


def _table_problem(f: BufferedReader, table: str) -> str | None:
    """Why the Parquet file ``f`` cannot be a shard of ``table`` (not Parquet, or columns
    the table does not have), or None.  Older schema versions have fewer columns."""
    f.seek(0)
    try:
        names = pq.read_schema(f).names
    except (pa.ArrowException, OSError, ValueError) as exc:
        return f"not a Parquet file ({first_line(exc, 120)})"
    extra = sorted(set(names) - _columns(table))
    return f"columns {', '.join(extra[:3])} that table {table} does not have" if extra else None


@functools.cache
def _columns(table: str) -> frozenset[str]:
    return frozenset(arrow_schema(TABLES[table]).names)


def problems(data_dir: Path, entries: Iterable[ShardEntry]) -> dict[str, str]:
    """Listed path -> why it cannot be trusted (missing, wrong size, wrong sha256), for the
    shards of ``entries`` that fail; every other one is intact."""
    entries = list(entries)
    threads = max(1, min(HASH_THREADS, os.cpu_count() or 1, len(entries)))
    with ThreadPoolExecutor(threads) as pool:
        verdicts = list(pool.map(lambda e: _check(data_dir, e), entries))
    found = {}
    with _lock:
        for entry, (key, problem) in zip(entries, verdicts, strict=True):
            if key is not None:
                _verdicts[key] = problem
            if problem is not None:
                found[entry.path] = problem
    return found


def shard_problem(data_dir: Path, entry: ShardEntry) -> str | None:
    """Why one listed shard cannot be trusted, or None."""
    return problems(data_dir, [entry]).get(entry.path)


def require_intact(data_dir: Path, manifest: Manifest) -> None:
    """DatasetError naming the first corrupt listed shard and ``taskfactory repair``."""
    bad = problems(data_dir, manifest.shards)
    if bad:
        path, problem = next(iter(bad.items()))
        more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
        raise DatasetError(f"{data_dir} has corrupt shards: {data_dir / path} ({problem}){more}; "
                           f"quarantine them and re-run their candidates with "
                           f"`{REPAIR_HINT.format(data=data_dir)}`")


def note_excluded(path: Path, problem: str) -> None:
    """Record that a reader of this process left ``path`` out."""
    with _lock:
        _excluded[str(path)] = problem


def take_excluded() -> dict[str, str]:
    """The shards readers of this process left out since the last call (and forget them)."""
    with _lock:
        found = dict(_excluded)
        _excluded.clear()
    return found
