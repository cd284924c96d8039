"""Shortcut controls for the ``sql`` ecosystem: fake a table without doing the work.

``empty`` creates the expected table (or view) as an empty table with the expected
columns; ``fill`` creates it with one row per instruction literal, the literal in every
column.  A table changed in place is emptied, or refilled the same way.  Indexes are not
faked (creating the right index is the work itself).  Files are left to the default.
``near_misses`` gives the near-miss control's change of a table or view a task makes: its
columns in reverse order.
"""

from __future__ import annotations

import shlex

DB = "shop.db"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _columns(expected: dict) -> list[str] | None:
    if isinstance(expected.get("schema"), dict):
        return list(expected["schema"].get("columns") or [])
    rows = expected.get("tables")
    if isinstance(rows, list) and rows:
        return sorted(rows[0])
    return None


def _script(key: str, expected: dict, rows: list[list[str]]) -> str | None:
    columns = _columns(expected)
    if not columns:
        return None
    table = _ident(key)
    drops = [f"sqlite3 {DB} {shlex.quote(f'DROP {kind} IF EXISTS {table}')} 2>/dev/null || true"
             for kind in ("VIEW", "TABLE")]  # one of them fails: a name is a view or a table
    sql = [f"CREATE TABLE {table} ({', '.join(map(_ident, columns))});"]
    sql += [f"INSERT INTO {table} VALUES ({', '.join(map(_literal, row))});" for row in rows]
    return "\n".join(drops) + f"\nsqlite3 -bail {DB} <<'SQL'\n" + "\n".join(sql) + "\nSQL"


def empty(key: str, expected: dict) -> str | None:
    if "tables" not in expected and "schema" not in expected:
        return None
    return _script(key, expected, [])


def fill(key: str, expected: dict, literals: list[str]) -> str | None:
    if "tables" not in expected and "schema" not in expected:
        return None
    width = len(_columns(expected) or [])
    return _script(key, expected, [[lit] * width for lit in literals])


_REORDER = """\
import sqlite3, sys
db, name = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db)
kind, sql = con.execute("SELECT type, sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
q = lambda s: '"' + s.replace('"', '""') + '"'
found = con.execute(f"SELECT * FROM {q(name)} LIMIT 0").description
cols = ", ".join(q(d[0]) for d in reversed(found))
if kind == "view":
    body = sql[sql.upper().index(" AS ") + 4:]
    con.executescript(f"DROP VIEW {q(name)}; CREATE VIEW {q(name)} AS SELECT {cols} FROM ({body});")
else:
    con.executescript(f"CREATE TABLE tf_reordered AS SELECT {cols} FROM {q(name)}; "
                      f"DROP TABLE {q(name)}; ALTER TABLE tf_reordered RENAME TO {q(name)};")
con.commit()
"""


def near_misses(key: str, expected: dict) -> list[tuple[str, str, str]]:
    """The near-miss control's change of a table or view the task makes: its columns in
    reverse order (``schema`` lists them in the table's order), when that is another
    order."""
    columns = (expected.get("schema") or {}).get("columns") if isinstance(
        expected.get("schema"), dict) else None
    if not columns or columns == columns[::-1]:
        return []
    command = f"python3 -c {shlex.quote(_REORDER)} {DB} {shlex.quote(key)}"
    return [("schema", f"the column order of `{key}`", command)]
