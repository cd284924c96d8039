"""The :class:`Dataset` object: one dataset folder, read and written through one handle.

Reading never changes the folder and never trusts a byte the manifest does not vouch for:
every read verifies each listed shard's sha256 first and leaves a corrupt one out with a
warning (:func:`tasks.dataset.query.connect`).  Writing goes through the writer lock:
:meth:`Dataset.writable` for the maintenance commands, :meth:`Dataset.run` for a factory
run.  Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from pydantic import ValidationError

from schemas.records import TaskRow
from tasks.dataset.dedup import DedupIndex
from tasks.dataset.interrupts import keyboard_interrupts
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.query import (
    QueryError,
    ReadOnlyError,
    Warn,
    check_read_only,
    connect,
    run_query,
    stream_rows,
    warn_on_stderr,
)
from tasks.dataset.run_writer import RunWriter, writing_run
from tasks.dataset.runs import resumable
from tasks.dataset.store.errors import first_line
from tasks.dataset.store.folder import check_dataset
from tasks.dataset.store.lock import dataset_lock, holds, open_for_writing
from tasks.dataset.store.manifest import DatasetError, Manifest, load_manifest

if TYPE_CHECKING:
    from tasks.dataset.report.instructions import InstructionStats

FLAT_MEMORY: dict[str, str | int] = {"threads": 1, "memory_limit": "256MB"}
"""DuckDB settings for reading the whole dataset with a peak flat in its size (the report
is Python-bound anyway: ``stats`` and the card; one thread also starts each of its small
queries sooner — 212 against 306 ms for the report of a 6-candidate dataset here)."""


ROW_ERRORS: tuple[type[Exception], ...] = (
    duckdb.Error, TypeError, ValueError, KeyError, IndexError, AttributeError)
"""What DuckDB, or the code reading rows, raises on shards that match the manifest but not
their table (crafted, or damaged before their sha256 was taken)."""


@contextlib.contextmanager
def readable(data: Path, keep: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Turn :data:`ROW_ERRORS` into one DatasetError line naming ``data``; ``keep``: errors
    of the caller's own (a ValueError subclass such as HarborError) raised as they are."""
    passed: tuple[type[Exception], ...] = (DatasetError, *keep)
    try:
        yield
    except passed:
        raise
    except ROW_ERRORS as exc:
        raise DatasetError(f"{data} holds rows this taskfactory cannot read ({type(exc).__name__}:"
                           f" {first_line(exc)}); its shards match the manifest but not their "
                           "tables: restore the dataset from a backup") from None


class Dataset:
    """A dataset folder: ``_manifest.json``, one folder of Parquet shards per table, the
    card.  ``warn`` receives the one-line warnings of reads (a corrupt shard left out, an
    interrupted writer's files found)."""

    def __init__(self, path: Path, warn: Warn = warn_on_stderr) -> None:
        self.path = path
        self.warn = warn

    @classmethod
    def open(cls, path: Path, warn: Warn = warn_on_stderr) -> Dataset:
        """An existing dataset folder; DatasetError naming the fix when there is none or
        the folder is not a dataset (:func:`tasks.dataset.store.folder.check_dataset`)."""
        check_dataset(path)
        return cls(path, warn)

    # ---- reading --------------------------------------------------------------------

    def manifest(self) -> Manifest:
        """The committed manifest (empty for a new folder); DatasetError when it is
        unreadable or of a newer schema."""
        return load_manifest(self.path)

    def connect(self, settings: Mapping[str, str | int] | None = None
                ) -> duckdb.DuckDBPyConnection:
        """A read-only DuckDB with one view per table over the intact listed shards (the
        caller closes it); ``settings`` such as ``threads`` apply before it is locked."""
        return connect(self.path, self.warn, settings)

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        """(columns, rows) of one user ``SELECT``; ReadOnlyError for anything else,
        ``duckdb.Error`` when it fails."""
        return run_query(self.path, sql, self.warn)

    def rows(self, sql: str, params: list | None = None) -> Iterator[tuple]:
        """The rows of the project's own ``sql``, streamed a batch at a time; the
        connection is opened at the first row and closed when the stream ends."""
        with readable(self.path), contextlib.closing(self.connect()) as con:
            yield from stream_rows(con, sql, params)

    def task_rows(self, where: str | None = None) -> list[TaskRow]:
        """The accepted tasks matching the user condition ``where`` (SQL on ``tasks`` joined
        with the ``difficulty`` view, so ``pass_at_k < 0.75`` works), one per task id, by
        ecosystem and id.  QueryError when ``where`` is refused or fails;
        DatasetError for a task that lacks fields (written by an older taskfactory)."""
        columns = ", ".join(f'"{f}"' for f in TaskRow.model_fields)
        source = "tasks left join difficulty using (task_id)" if where else "tasks"
        sql = (f"select {columns} from {source}" + (f" where {where}" if where else "")
               + " order by ecosystem, task_id")
        with contextlib.closing(self.connect()) as con:
            try:
                check_read_only(con, sql)
                cur = con.execute(sql)
                names = [d[0] for d in cur.description]
                records = [dict(zip(names, values, strict=True)) for values in cur.fetchall()]
            except (duckdb.Error, ReadOnlyError) as exc:
                raise QueryError(f"query failed: {str(exc).splitlines()[0]}") from None
        tasks: dict[str, TaskRow] = {}
        for record in records:
            if record["task_id"] not in tasks:
                tasks[record["task_id"]] = self._task(record)
        return list(tasks.values())

    def _task(self, record: dict) -> TaskRow:
        try:
            return TaskRow.model_validate(record)
        except ValidationError as exc:
            fields = sorted({str(e["loc"][0]) for e in exc.errors()})
            raise DatasetError(f"task {record['task_id']} in {self.path} lacks "
                               f"{', '.join(fields)}: it was written by an older "
                               "taskfactory; regenerate it") from None

    def report(self) -> str:
        """The ``taskfactory stats`` markdown report (:mod:`tasks.dataset.report.stats`)."""
        from tasks.dataset.report.stats import report

        with readable(self.path), contextlib.closing(self.connect(FLAT_MEMORY)) as con:
            return report(con)

    def instruction_stats(self) -> InstructionStats:
        """Instruction diversity and audit figures (:mod:`tasks.dataset.report.instructions`)."""
        from tasks.dataset.report.instructions import instruction_stats

        with readable(self.path), contextlib.closing(self.connect(FLAT_MEMORY)) as con:
            return instruction_stats(con)

    def write_card(self) -> tuple[Path, str]:
        """Rewrite the dataset card (``README.md`` and ``plots/``); returns its path and the
        report it holds.  The caller holds the writer lock."""
        from tasks.dataset.report.card import write_card
        from tasks.dataset.report.stats import report

        with keyboard_interrupts(), readable(self.path), \
                contextlib.closing(self.connect(FLAT_MEMORY)) as con:
            markdown = report(con)
            return write_card(self.path, con, markdown), markdown

    def resumable(self, run_id: str | None = None) -> tuple[str, dict]:
        """(id, recorded settings) of the run ``--resume`` continues: ``run_id``, which
        must be unfinished, or the newest unfinished run.  DatasetError naming the fix."""
        manifest = self.manifest()
        chosen = resumable(manifest, str(self.path), run_id)
        return chosen, manifest.runs[chosen].settings

    # ---- writing --------------------------------------------------------------------

    def lock(self, lend: bool = False) -> contextlib.AbstractContextManager[None]:
        """Hold the writer lock (:func:`tasks.dataset.store.lock.dataset_lock`); ``lend``: one
        nested holder in this process (the flow a command starts) may enter."""
        return dataset_lock(self.path, lend=lend)

    def holds_lock(self) -> bool:
        """Whether this process holds the writer lock."""
        return holds(self.path)

    def writable(self) -> contextlib.AbstractContextManager[Manifest]:
        """The manifest, with the lock held and every writer's checks passed
        (:func:`tasks.dataset.store.lock.open_for_writing`)."""
        return open_for_writing(self.path, warn=self.warn)

    def run(self, identity: RunIdentity, settings: dict, images: Mapping[str, str | None],
            index: DedupIndex, repair: bool = False
            ) -> contextlib.AbstractContextManager[RunWriter]:
        """The dataset held for one run: skip what it holds, record outcomes in candidate
        order, finish (:mod:`tasks.dataset.run_writer`)."""
        return writing_run(self.path, identity, settings, images, index, repair, self.warn)
