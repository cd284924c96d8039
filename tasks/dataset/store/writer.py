"""Publishing: stream rows into zstd Parquet shards, committed atomically with a manifest.

Layout: ``<data>/<table>/part-<run>-<seq>.<sha16>.parquet`` plus ``<data>/_manifest.json``
(the commit protocol is in :mod:`tasks.dataset.store.manifest`, names and the commit record every
shard
carries in :mod:`tasks.dataset.store.commits`).  Rows arrive in **groups** — all rows of
one candidate, over several tables — and a group is never split between commits: a
commit writes one shard per table with buffered rows and then lists all of them in one
manifest update, so after a crash a candidate is either wholly in the dataset or not at
all.  The buffer is flushed when any table holds ``max_rows`` rows or the buffered Arrow
data reaches ``max_bytes``: memory is bounded by the buffer, not by the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import arrow_schema
from schemas.records import SCHEMA_VERSION, TABLES, AttemptRow, TableRow
from tasks.dataset.store.commits import META_KEY, CommitRecord, next_seq, shard_name
from tasks.dataset.store.manifest import CommitEntry, Manifest, ShardEntry, save_manifest
from tasks.dataset.store.paths import atomic_write, check_name, real_folder

__all__ = ["ShardWriter", "table_schema"]


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table`` with ``schema_version`` and table name as metadata."""
    return arrow_schema(TABLES[table]).with_metadata(
        {"schema_version": str(SCHEMA_VERSION), "table": table})


class ShardWriter:
    """Buffers row groups and commits them as shards into a dataset opened for writing.

    ``manifest`` must come from :func:`tasks.dataset.store.lock.open_for_writing` (the caller holds
    the dataset lock).  ``close()`` commits what is left; without it (a crash, a kill) the
    uncommitted groups are simply not in the dataset."""

    def __init__(self, data_dir: Path, manifest: Manifest, run_id: str, max_rows: int = 500,
                 max_bytes: int = 16 << 20) -> None:
        self.data_dir = data_dir
        self.manifest = manifest
        self.run_id = check_name(run_id, "run id")
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._batches: dict[str, list[pa.RecordBatch]] = {t: [] for t in TABLES}
        self._rows = dict.fromkeys(TABLES, 0)
        self._bytes = 0
        self._candidates: list[str] = []
        self._seq = next_seq(data_dir, manifest, run_id)
        self.written = dict.fromkeys(TABLES, 0)
        """Rows committed per table by this writer."""
        self.commits = 0

    def add_group(self, rows: Iterable[tuple[str, TableRow]]) -> None:
        """Buffer rows that must be committed together; may commit."""
        staged, rows = [], list(rows)
        for table, row in rows:
            if row.provenance is None:
                raise ValueError(f"a {table} row without provenance cannot be written")
            staged.append((table, pa.RecordBatch.from_pylist(
                [row.model_dump(mode="python")], schema=table_schema(table))))
        self._candidates += [row.candidate_id for _, row in rows if isinstance(row, AttemptRow)]
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
        tables = [t for t in TABLES if self._batches[t]]
        record = CommitRecord(
            number=self.manifest.next_commit(), run_id=self.run_id,
            seqs={t: self._seq + i for i, t in enumerate(tables)}, candidates=self._candidates,
            run=self.manifest.runs.get(self.run_id), written_at=datetime.now(UTC).isoformat())
        self._seq += len(tables)
        meta = {META_KEY: record.model_dump_json().encode()}
        entries = []
        for table in tables:  # each table's buffer is released as soon as its shard is out
            batches, self._batches[table] = self._batches[table], []
            data = pa.Table.from_batches(batches)
            del batches
            entries.append(self._write_shard(table, record, data.replace_schema_metadata(
                {**data.schema.metadata, **meta})))
            del data
        self.manifest.shards.extend(entries)
        self.manifest.commits.append(CommitEntry(number=record.number, run_id=self.run_id,
                                                 candidates=record.candidates))
        save_manifest(self.data_dir, self.manifest)
        for e in entries:
            self.written[e.table] += e.rows
        self._batches = {t: [] for t in TABLES}
        self._rows = dict.fromkeys(TABLES, 0)
        self._bytes = 0
        self._candidates = []
        self.commits += 1

    def close(self) -> None:
        self.commit()

    def _write_shard(self, table: str, record: CommitRecord, data: pa.Table) -> ShardEntry:
        folder = real_folder(self.data_dir, table, create=True)
        assert folder is not None
        sink = pa.BufferOutputStream()
        pq.write_table(data, sink, compression="zstd", compression_level=3,
                       write_page_index=True)
        blob = sink.getvalue().to_pybytes()
        sha256 = hashlib.sha256(blob).hexdigest()
        path = folder / check_name(shard_name(self.run_id, record.seqs[table], sha256))
        atomic_write(path, blob)
        return ShardEntry(table=table, path=str(path.relative_to(self.data_dir)),
                          rows=data.num_rows, bytes=len(blob), sha256=sha256,
                          run_id=self.run_id, schema_version=SCHEMA_VERSION,
                          commit=record.number)
