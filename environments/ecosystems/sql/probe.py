"""Probe for the ``sql`` ecosystem: prints the shop's state as one canonical JSON object.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the workspace directory; it opens ``shop.db`` read-only and never changes it.

Sections (keys sorted, so two runs on one state print the same bytes):

- ``tables``: table or view name -> its rows, a list of ``{column: value}`` objects sorted
  canonically (row order and rowids are not state a solver controls).  Every non-NULL
  value is rendered as text (``str`` of the stored int/float/text; blobs as ``x'hex'``),
  so equivalent solutions that differ only in column affinity compare equal.
- ``schema``: name -> ``{"type": "table" | "view", "columns": [sorted column names]}``.
  No SQL text, root pages or column declarations: those differ between equal solutions.
- ``indexes``: user index name -> ``{"table", "columns" (in index order), "unique"}``.
- ``files``: every other file of the workspace (not the database, its journals, or the
  answer file): path -> its text when UTF-8 and <= 256 KiB, else ``{"sha256", "size"}``.
"""

import json
import os
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import file_entry

DB = "shop.db"
SKIP_FILES = {DB, DB + "-journal", DB + "-wal", DB + "-shm", "answer.txt"}


def cell(value):
    if value is None:
        return None
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    return str(value)


def quote_ident(name):
    return '"' + name.replace('"', '""') + '"'


def database():
    tables, schema, indexes = {}, {}, {}
    if not os.path.isfile(DB) or os.path.getsize(DB) == 0:
        return tables, schema, indexes
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        objects = con.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY name").fetchall()
        for kind, name, table in objects:
            if kind in ("table", "view"):
                try:
                    cur = con.execute(f"SELECT * FROM {quote_ident(name)}")
                    columns = [d[0] for d in cur.description]
                    rows = [{c: cell(v) for c, v in zip(columns, r, strict=True)} for r in cur]
                    rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
                except sqlite3.Error:  # e.g. a view over a dropped table
                    columns, rows = [], None
                tables[name] = rows
                schema[name] = {"type": kind, "columns": sorted(columns)}
            elif kind == "index":
                info = con.execute(f"PRAGMA index_info({quote_ident(name)})").fetchall()
                unique = [r[2] for r in con.execute(f"PRAGMA index_list({quote_ident(table)})")
                          if r[1] == name]
                indexes[name] = {"table": table,
                                 "columns": [r[2] for r in sorted(info)],
                                 "unique": bool(unique and unique[0])}
    finally:
        con.close()
    return tables, schema, indexes


def workspace_files():
    files = {}
    for root, dirs, names in os.walk("."):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = os.path.join(root, name)[2:]
            if path in SKIP_FILES or not os.path.isfile(path):
                continue
            files[path] = file_entry(path)
    return files


def main():
    tables, schema, indexes = database()
    state = {"tables": tables, "schema": schema, "indexes": indexes, "files": workspace_files()}
    print(json.dumps(state, sort_keys=True, separators=(",", ":")))


main()
