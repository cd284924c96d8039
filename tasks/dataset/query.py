"""Read a dataset with DuckDB: one view per table over its verified Parquet shards.

The connection is a sandbox for user SQL.  Before a view is built every listed shard's
sha256 is checked (:mod:`tasks.dataset.store.checksums`); the connection can then read exactly the
intact listed shards and nothing else (``enable_external_access`` off, ``allowed_paths``
the shards, extensions neither installed nor loaded, Python objects not scanned) and its
configuration is locked, so no statement can write a file, read one outside the dataset,
attach a database, load an extension or change a setting.  :func:`check_read_only`
admits only a single ``SELECT``.  DuckDB spills to this process's scratch folder
(:mod:`tasks.dataset.query_bounds`), never the caller's folder.  Imports neither Prefect
nor Docker (``tests/unit/test_cli_errors.py`` checks).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas.arrow import arrow_schema
from schemas.records import TABLES
from tasks.dataset.difficulty import VIEW_SQL as DIFFICULTY_VIEW
from tasks.dataset.query_bounds import scratch_dir
from tasks.dataset.store.checksums import note_excluded, problems
from tasks.dataset.store.commits import accounting_problem
from tasks.dataset.store.folder import check_dataset
from tasks.dataset.store.manifest import MANIFEST, REPAIR_HINT, DatasetError, load_manifest

Warn = Callable[[str], object]
SANDBOX = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
           "python_enable_replacements": False}


class ReadOnlyError(ValueError):
    """SQL that is not a single read statement; the message says what was refused."""


class QueryError(DatasetError):
    """A user's SQL condition that was refused (not read-only) or failed in DuckDB."""


def warn_on_stderr(message: str) -> None:
    """The readers' default ``warn``: one ``warning: ...`` line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def connect(data_dir: Path, warn: Warn = warn_on_stderr,
            settings: Mapping[str, str | int] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory, locked-down DuckDB with one view per table over the intact shards the
    manifest lists; ``settings`` (e.g. ``threads``, ``memory_limit``) are applied before
    the configuration is locked.

    Shards not listed are never read; when they are more than a killed writer's last
    commit (no manifest, or an older one) a ``warn`` line names the repair command and
    the folder is recorded as excluded.  Besides the tables, the ``difficulty`` view
    (:mod:`tasks.dataset.difficulty`).  A listed shard that is missing, has the wrong size
    or the wrong sha256 is left out, with one ``warn`` line naming its path and the repair
    command, and recorded (:func:`tasks.dataset.store.checksums.take_excluded`); the views answer
    from
    the intact shards.  Every view has the current schema's columns: shards of older
    schema versions read as NULL where a column is new.  Raises
    :class:`tasks.dataset.store.manifest.DatasetError` for an unreadable manifest or a newer schema.
    """
    check_dataset(data_dir, missing_ok=True)
    manifest = load_manifest(data_dir)
    unlisted = accounting_problem(data_dir, manifest)
    if unlisted:
        warn(f"{unlisted}; until then only the listed shards answer")
        note_excluded(data_dir, unlisted)
    bad = problems(data_dir, manifest.shards)
    shards: dict[str, list[str]] = {t: [] for t in TABLES}
    twice = set(manifest.duplicates())
    for rel in sorted(twice):
        warn(f"{data_dir / MANIFEST} lists {rel} more than once; its rows are read once; run "
             f"`{REPAIR_HINT.format(data=data_dir)}`")
        note_excluded(data_dir / rel, "listed twice")
    for entry in manifest.once():
        path = data_dir / entry.path
        if entry.path in bad:
            warn(f"skipping corrupt shard {path} ({bad[entry.path]}); {entry.table} answers "
                 f"from the intact shards; run `{REPAIR_HINT.format(data=data_dir)}`")
            note_excluded(path, bad[entry.path])
        elif entry.table in shards:
            shards[entry.table].append(str(path.resolve()))
    con = duckdb.connect(config={**SANDBOX, "temp_directory": scratch_dir(), **(settings or {})})
    con.execute("SET enable_progress_bar = false")  # results go to stdout: no bar there
    con.execute("SET allowed_paths = ?", [[p for files in shards.values() for p in files]])
    con.execute("SET enable_external_access = false")
    for table, model in TABLES.items():
        empty = pa.Table.from_pylist([], schema=arrow_schema(model))
        con.register(f"_empty_{table}", empty)
        if shards[table]:
            files = ", ".join("'" + p.replace("'", "''") + "'" for p in shards[table])
            try:
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{files}], "
                            f"union_by_name = true) UNION ALL BY NAME SELECT * FROM _empty_{table}")
            except duckdb.Error as e:  # metadata the checksum vouched for, yet unreadable
                con.close()
                why = str(e).splitlines()[0]
                raise DatasetError(f"a shard of {table} in {data_dir} cannot be read ({why}); "
                                   f"run `{REPAIR_HINT.format(data=data_dir)}`") from None
        else:
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM _empty_{table}")
    con.execute(DIFFICULTY_VIEW)
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """ReadOnlyError unless ``sql`` is exactly one ``SELECT`` statement (parsed by DuckDB;
    ``duckdb.ParserException`` for SQL it cannot parse)."""
    kinds = [_kind(s) for s in con.extract_statements(sql)]
    if kinds != ["SELECT"]:
        got = ", ".join(kinds) if kinds else "no statement"
        raise ReadOnlyError(f"only a single SELECT statement is accepted (got {got}); the "
                            "dataset is read-only and queries cannot reach other files")


def _kind(statement: duckdb.Statement) -> str:
    try:
        return statement.type.name
    except ValueError:  # a statement type this duckdb module has no name for
        return "UNKNOWN"


def stream_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None,
                batch: int = 256) -> Iterator[tuple]:
    """The rows of ``sql`` as tuples, ``batch`` at a time through an Arrow reader: a
    DB-API result (``execute``) would hold all of them in memory at once."""
    for rows in _batches(con.sql(sql, params=params), batch):
        yield from rows


def user_query(con: duckdb.DuckDBPyConnection, sql: str, batch: int = 2048
               ) -> tuple[list[str], Iterator[list[tuple]]]:
    """The column names of a user's ``sql`` and its rows, ``batch`` at a time as they come
    (ReadOnlyError for anything but one SELECT)."""
    check_read_only(con, sql)
    relation = con.sql(sql)
    return list(relation.columns), _batches(relation, batch)


def _batches(relation: duckdb.DuckDBPyRelation, batch: int) -> Iterator[list[tuple]]:
    """The rows, ``batch`` at a time; what DuckDB reports while it streams (pyarrow raises
    it as an OSError: a batch of over 2 GiB of text, say) is a QueryError."""
    reader = relation.to_arrow_reader(batch)
    while True:
        try:
            b = reader.read_next_batch()
        except StopIteration:
            return
        except OSError as exc:
            raise QueryError(f"query failed: {str(exc).splitlines()[0]}") from exc
        yield list(zip(*(column.to_pylist() for column in b.columns), strict=True))


def run_query(data_dir: Path, sql: str, warn: Warn = warn_on_stderr
              ) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of one read-only statement over ``data_dir``."""
    con = connect(data_dir, warn)
    try:
        check_read_only(con, sql)
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description] if cur.description else []
        return columns, cur.fetchall()
    finally:
        con.close()
