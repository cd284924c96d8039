"""Read a dataset with DuckDB: one view per table over its Parquet shards.

Imports neither Prefect nor Docker, so ``taskfactory query`` starts in well under a second.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas.arrow import arrow_schema
from schemas.records import TABLES


def connect(data_dir: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views ``tasks``, ``trajectories``, ``attempts``.

    A table with no shards yet is an empty view with the table's schema.
    """
    con = duckdb.connect()
    for table, model in TABLES.items():
        shards = sorted((data_dir / table).glob("*.parquet"))
        if shards:
            files = ", ".join("'" + str(p).replace("'", "''") + "'" for p in shards)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{files}], "
                        "union_by_name = true)")
        else:
            empty = pa.Table.from_pylist([], schema=arrow_schema(model))
            con.register(f"_empty_{table}", empty)
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _empty_{table}")
    return con


def run_query(data_dir: Path, sql: str) -> tuple[list[str], list[tuple]]:
    con = connect(data_dir)
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
        writer = csv.writer(buf)
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
