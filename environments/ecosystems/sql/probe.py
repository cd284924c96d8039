"""Probe for the ``sql`` ecosystem: prints the shop's state as one canonical JSON object.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the workspace directory, and inside the verifier (as root, on what the agent left).  It
never opens the agent's ``shop.db``: it copies the file, and its ``-wal`` or ``-journal``
when there is one (regular files only, no symlink followed), into a folder of its own,
reads the copy and removes the folder, so nothing can be swapped mid-read and the
workspace is never written.  A ``shop.db`` that is no regular file reads as a missing one.
The connection runs with ``trusted_schema`` off and extension loading never enabled (the
sqlite3 module's default), and each statement has a budget of virtual-machine steps: a
view that would run forever or fill memory reads as ``null`` rows, like a broken view.

Sections (keys sorted, so two runs on one state print the same bytes):

- ``tables``: table or view name -> its rows, a list of ``{column: value}`` objects sorted
  canonically (row order and rowids are not state a solver controls).  Every non-NULL
  value is rendered as text (``str`` of the stored int/float/text; blobs as ``x'hex'``),
  so equivalent solutions that differ only in column affinity compare equal.
- ``schema``: name -> ``{"type": "table" | "view", "columns": [column names, in the
  table's order]}``: a task that promises a table's columns in an order checks it.
  No SQL text, root pages or column declarations: those differ between equal solutions.
- ``indexes``: user index name -> ``{"table", "columns" (in index order), "unique"}``.
- ``files``: every other file of the workspace outside hidden folders (not the database,
  its journals, or the answer file): path -> its text when UTF-8 and <= 256 KiB, else
  ``{"sha256", "size"}``; links and special files as in the ``files`` probe.
"""

import json
import os
import sqlite3

TYPE_CHECKING = False  # not typing's: importing typing costs more than a probe's work
if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import NotRegular, copy_regular, private_dir, workspace_entries

DB = "shop.db"
SKIP_FILES = {DB, DB + "-journal", DB + "-wal", DB + "-shm", "answer.txt"}
MAX_DB = 1 << 30
"""A database (or journal) larger than this is not copied: the probe fails."""
STEP_BUDGET = 5_000_000
"""Virtual-machine steps one statement may take: ~11 a row read (a seeded table of 260
rows takes ~3,000), so ~450,000 rows, a few hundred MB as Python objects."""


def cell(value):
    if value is None:
        return None
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    return str(value)


def quote_ident(name):
    return '"' + name.replace('"', '""') + '"'


def private_copy(folder):
    """The path of a copy of ``shop.db`` (with its ``-wal`` and ``-journal`` when they are
    regular files) in ``folder``; None when the workspace holds no non-empty regular
    ``shop.db`` (a symlink, a FIFO or a directory reads as no database)."""
    copy = os.path.join(folder, DB)
    try:
        size = copy_regular(DB, copy, MAX_DB)
    except (FileNotFoundError, NotRegular):
        return None
    if size == 0:
        return None
    for suffix in ("-wal", "-journal"):
        try:
            copy_regular(DB + suffix, copy + suffix, MAX_DB)
        except (FileNotFoundError, NotRegular):
            continue
    return copy


def connect(path):
    """A connection to the private copy: no schema-borne functions with side effects, no
    extensions (``enable_load_extension`` is never called), a step budget per statement."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA trusted_schema=OFF")
    steps = [0]

    def over_budget():
        steps[0] += 1000
        return steps[0] > STEP_BUDGET

    con.set_progress_handler(over_budget, 1000)
    return con, steps


def database():
    with private_dir() as folder:
        path = private_copy(folder)
        return read_database(*connect(path)) if path else ({}, {}, {})


def read_database(con, steps):
    tables, schema, indexes = {}, {}, {}
    try:
        objects = con.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY name").fetchall()
        for kind, name, table in objects:
            steps[0] = 0
            if kind in ("table", "view"):
                try:
                    cur = con.execute(f"SELECT * FROM {quote_ident(name)}")
                    columns = [d[0] for d in cur.description]
                    rows = [{c: cell(v) for c, v in zip(columns, r, strict=True)} for r in cur]
                    rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
                except sqlite3.Error:  # e.g. a view over a dropped table, or over budget
                    columns, rows = [], None
                tables[name] = rows
                schema[name] = {"type": kind, "columns": columns}
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


def main():
    tables, schema, indexes = database()
    files = workspace_entries(skip=SKIP_FILES, hidden_dirs=False)
    state = {"tables": tables, "schema": schema, "indexes": indexes, "files": files}
    print(json.dumps(state, sort_keys=True, separators=(",", ":")))


main()
