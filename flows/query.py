"""Read a dataset with DuckDB: one view per table over its Parquet shards.

Imports neither Prefect nor Docker, so ``taskfactory query`` starts in well under a second.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas.arrow import arrow_schema
from schemas.records import TABLES
from tasks.manifest import load_manifest, shard_problem

Warn = Callable[[str], object]


def _stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def connect(data_dir: Path, checksum: bool = False, warn: Warn = _stderr
            ) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per table over the shards the manifest lists.

    Shards not listed are never read.  A listed shard that is missing, has the wrong size
    or (with ``checksum``) the wrong sha256 is left out, with one ``warn`` line naming its
    path; the views answer from the intact shards.  Every view has the current schema's
    columns: shards of older schema versions read as NULL where a column is new.  Raises
    :class:`tasks.manifest.DatasetError` for a dataset of a newer schema version.
    """
    manifest = load_manifest(data_dir)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # results go to stdout: no bar there
    for table, model in TABLES.items():
        shards = []
        for entry in manifest.listed(table):
            problem = shard_problem(data_dir, entry, checksum)
            if problem:
                warn(f"skipping corrupt shard {data_dir / entry.path} ({problem}); "
                     f"{table} answers from the intact shards")
            else:
                shards.append(data_dir / entry.path)
        empty = pa.Table.from_pylist([], schema=arrow_schema(model))
        con.register(f"_empty_{table}", empty)
        if shards:
            files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in shards)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{files}], "
                        f"union_by_name = true) UNION ALL BY NAME SELECT * FROM _empty_{table}")
        else:
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _empty_{table}")
    return con


def stream_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None,
                batch: int = 256) -> Iterator[tuple]:
    """The rows of ``sql`` as tuples, ``batch`` at a time through an Arrow reader: a
    DB-API result (``execute``) would hold all of them in memory at once."""
    for b in con.sql(sql, params=params).to_arrow_reader(batch):
        yield from zip(*(column.to_pylist() for column in b.columns), strict=True)


def run_query(data_dir: Path, sql: str, checksum: bool = False, warn: Warn = _stderr
              ) -> tuple[list[str], list[tuple]]:
    con = connect(data_dir, checksum, warn)
    try:
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description] if cur.description else []
        return columns, cur.fetchall()
    finally:
        con.close()


def format_rows(columns: list[str], rows: list[tuple], fmt: str, max_width: int = 60) -> str:
    if fmt == "json":
        return "\n".join(json.dumps(dict(zip(columns, r, strict=True)), default=str)
                         for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")  # not the module's default CRLF
        writer.writerow(columns)
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")

    def cell(v: object) -> str:
        s = "NULL" if v is None else str(v).replace("\n", "\\n")
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    cells = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths, strict=True))  # noqa: E731
    out = [line(columns), "-+-".join("-" * w for w in widths)] + [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
