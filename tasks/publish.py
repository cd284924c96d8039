"""Publishing: stream rows into zstd Parquet shards, committed atomically with a manifest.

Layout: ``<data>/<table>/part-<run>-<seq>.parquet`` plus ``<data>/_manifest.json`` (the
commit protocol is in :mod:`tasks.manifest`).  Rows arrive in **groups** — all rows of
one candidate, over several tables — and a group is never split between commits: a
commit writes one shard per table with buffered rows and then lists all of them in one
manifest update, so after a crash a candidate is either wholly in the dataset or not at
all.  The buffer is flushed when any table holds ``max_rows`` rows or the buffered Arrow
data reaches ``max_bytes``: memory is bounded by the buffer, not by the run.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import arrow_schema
from schemas.records import SCHEMA_VERSION, TABLES, _Row
from tasks.manifest import Manifest, ShardEntry, atomic_write, save_manifest

__all__ = ["ShardWriter", "atomic_write", "check_writable", "table_schema"]


def check_writable(data_dir: Path) -> None:
    """Raise OSError (with a reason) unless ``data_dir`` can hold a dataset.  Creates
    nothing: a folder that does not exist yet is checked by writing (and removing) a probe
    file in its closest existing parent."""
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
    probe = existing / f".write-test-{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table`` with ``schema_version`` and table name as metadata."""
    return arrow_schema(TABLES[table]).with_metadata(
        {"schema_version": str(SCHEMA_VERSION), "table": table})


class ShardWriter:
    """Buffers row groups and commits them as shards into a dataset opened for writing.

    ``manifest`` must come from :func:`tasks.manifest.open_for_writing` (the caller holds
    the dataset lock).  ``close()`` commits what is left; without it (a crash, a kill) the
    uncommitted groups are simply not in the dataset."""

    def __init__(self, data_dir: Path, manifest: Manifest, run_id: str, max_rows: int = 500,
                 max_bytes: int = 16 << 20) -> None:
        self.data_dir = data_dir
        self.manifest = manifest
        self.run_id = run_id
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._batches: dict[str, list[pa.RecordBatch]] = {t: [] for t in TABLES}
        self._rows = dict.fromkeys(TABLES, 0)
        self._bytes = 0
        self._seq = manifest.next_seq(run_id)
        self.written = dict.fromkeys(TABLES, 0)
        """Rows committed per table by this writer."""
        self.commits = 0

    def add_group(self, rows: Iterable[tuple[str, _Row]]) -> None:
        """Buffer rows that must be committed together; may commit."""
        staged = []
        for table, row in rows:
            if row.provenance is None:
                raise ValueError(f"a {table} row without provenance cannot be written")
            staged.append((table, pa.RecordBatch.from_pylist(
                [row.model_dump(mode="python")], schema=table_schema(table))))
        for table, batch in staged:
            self._batches[table].append(batch)
            self._rows[table] += batch.num_rows
            self._bytes += batch.nbytes
        if self._bytes >= self.max_bytes or max(self._rows.values()) >= self.max_rows:
            self.commit()

    @property
    def buffered(self) -> int:
        return sum(self._rows.values())

    def commit(self) -> None:
        """Write every buffered table as one shard, then list them all in the manifest."""
        if not self.buffered:
            return
        entries = []
        for table in TABLES:  # each table's buffer is released as soon as its shard is out
            batches, self._batches[table] = self._batches[table], []
            if batches:
                entries.append(self._write_shard(table, pa.Table.from_batches(batches)))
                del batches
        self.manifest.shards.extend(entries)
        save_manifest(self.data_dir, self.manifest)
        for e in entries:
            self.written[e.table] += e.rows
        self._batches = {t: [] for t in TABLES}
        self._rows = dict.fromkeys(TABLES, 0)
        self._bytes = 0
        self.commits += 1

    def close(self) -> None:
        self.commit()

    def _write_shard(self, table: str, data: pa.Table) -> ShardEntry:
        folder = self.data_dir / table
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"part-{self.run_id}-{self._seq:05d}.parquet"
        self._seq += 1
        sink = pa.BufferOutputStream()
        pq.write_table(data, sink, compression="zstd", compression_level=3,
                       write_page_index=True)
        blob = sink.getvalue().to_pybytes()
        atomic_write(path, blob)
        return ShardEntry(table=table, path=str(path.relative_to(self.data_dir)),
                          rows=data.num_rows, bytes=len(blob),
                          sha256=hashlib.sha256(blob).hexdigest(), run_id=self.run_id,
                          schema_version=SCHEMA_VERSION)
