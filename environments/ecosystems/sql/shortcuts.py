"""Shortcut controls for the ``sql`` ecosystem: fake a table without doing the work.

``empty`` creates the expected table (or view) as an empty table with the expected
columns; ``fill`` creates it with one row per instruction literal, the literal in every
column.  A table changed in place is emptied, or refilled the same way.  Indexes are not
faked (creating the right index is the work itself).  Files are left to the default.
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
