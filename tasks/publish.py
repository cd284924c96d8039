"""Publishing: stream rows into zstd Parquet shards, atomically, with a manifest.

Layout: ``<data>/<table>/part-<run>-<seq>.parquet`` plus ``<data>/_manifest.json``.
A shard is written to a hidden temp name in the same folder, fsynced, then renamed into
place; the manifest (shard path, rows, sha256) is rewritten the same way after each
shard, so readers never see a partial file.  Rows are buffered per table and flushed
every ``rows_per_shard`` rows: memory is bounded by the buffer, not by the run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from schemas.arrow import arrow_schema
from schemas.records import SCHEMA_VERSION, TABLES

MANIFEST = "_manifest.json"


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


def check_writable(data_dir: Path) -> None:
    """Raise OSError (with a reason) unless ``data_dir`` can hold a dataset."""
    data_dir.mkdir(parents=True, exist_ok=True)
    probe = data_dir / f".write-test-{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()


class ShardWriter:
    """Buffers rows per table and writes them as shards; ``close()`` flushes the rest."""

    def __init__(self, data_dir: Path, run_id: str, rows_per_shard: int = 500) -> None:
        self.data_dir = data_dir
        self.run_id = run_id
        self.rows_per_shard = rows_per_shard
        self._buffers: dict[str, list[dict]] = {t: [] for t in TABLES}
        self._seq = 0
        self.written: dict[str, int] = {t: 0 for t in TABLES}

    def add(self, table: str, row: BaseModel) -> None:
        self._buffers[table].append(row.model_dump(mode="python"))
        if len(self._buffers[table]) >= self.rows_per_shard:
            self._flush(table)

    def close(self) -> None:
        for table in TABLES:
            self._flush(table)

    def _flush(self, table: str) -> None:
        rows = self._buffers[table]
        if not rows:
            return
        schema = arrow_schema(TABLES[table]).with_metadata(
            {"schema_version": str(SCHEMA_VERSION), "table": table})
        arrow_table = pa.Table.from_pylist(rows, schema=schema)
        folder = self.data_dir / table
        folder.mkdir(parents=True, exist_ok=True)
        self._seq += 1
        path = folder / f"part-{self.run_id}-{self._seq:05d}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(arrow_table, sink, compression="zstd", compression_level=3)
        data = sink.getvalue().to_pybytes()
        atomic_write(path, data)
        self._record(table, path, len(rows), hashlib.sha256(data).hexdigest())
        self.written[table] += len(rows)
        self._buffers[table] = []

    def _record(self, table: str, path: Path, rows: int, sha256: str) -> None:
        manifest_path = self.data_dir / MANIFEST
        manifest = (json.loads(manifest_path.read_text()) if manifest_path.exists()
                    else {"schema_version": SCHEMA_VERSION, "shards": []})
        manifest["shards"].append({"table": table, "path": str(path.relative_to(self.data_dir)),
                                   "rows": rows, "sha256": sha256, "run_id": self.run_id})
        atomic_write(manifest_path, json.dumps(manifest, indent=2).encode())
