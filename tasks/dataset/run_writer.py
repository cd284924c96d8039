"""Writing one run into a dataset: the context a factory run writes through.

:func:`writing_run` (``Dataset.run``) holds the dataset for the run, in this order:

1. **open**: takes the writer lock (or the one the caller lent), refuses a folder whose
   manifest cannot account for its shards or that holds a corrupt shard
   (:func:`tasks.dataset.store.lock.open_for_writing`), then reads what the dataset holds:
   :attr:`RunWriter.held` (candidates settled under the run's config hash, which the run
   skips) and every task into the dedup index, in commit order;
2. :meth:`RunWriter.keep_ecosystems`: a snapshot of each user ecosystem folder the run
   uses, unless the dataset holds it already; then :meth:`RunWriter.begin`: the run is
   recorded ``running`` in the manifest (a resume is counted, a repair is not); from
   then on an exception that leaves the context marks
   the run ``failed`` with the reason (a repair's run ``complete`` again), in the
   *committed* manifest (so no uncommitted shard gets listed), while the lock is still
   held.  A kill leaves it ``running``; ``--resume`` continues both.  So that a full disk
   can still be told the run failed, ``begin`` sets room aside (:data:`RESERVE`, twice the
   manifest and at least 256 KiB), given back before the failure is recorded and when the
   run ends;
3. :meth:`RunWriter.record`, once per candidate **in candidate order**: dedup, provenance
   (:class:`tasks.dataset.recorder.Recorder`), then the shard writer, which commits every
   ``shard_rows`` rows or 16 MB;
4. :meth:`RunWriter.finish`: commits the rest; unless a candidate errored (the run then
   stays unfinished for a resume), writes the ``runs`` row and marks the run ``complete``
   in the same manifest update — or, when the run has its row already (a repair re-runs
   candidates of a complete run), marks it ``complete`` alone.

A run that has nothing to do never calls :meth:`~RunWriter.begin` and writes nothing.
Run semantics (what is held, resumes, errored attempts) are in :mod:`tasks.dataset.runs`.
"""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from schemas.records import RunRow
from tasks.dataset.dedup import DedupIndex
from tasks.dataset.interrupts import keyboard_interrupts
from tasks.dataset.provenance import RunIdentity, generator_version
from tasks.dataset.query import Warn, connect
from tasks.dataset.recorder import Outcome, Recorder
from tasks.dataset.runs import (
    RunTally,
    begin,
    held_candidates,
    indexed_tasks,
    tally,
    unless_recorded,
)
from tasks.dataset.store.folder import RESERVE
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.manifest import (
    MANIFEST,
    DatasetError,
    Manifest,
    RunEntry,
    load_manifest,
    save_manifest,
)
from tasks.dataset.store.paths import create
from tasks.dataset.store.snapshots import store_snapshot
from tasks.dataset.store.writer import ShardWriter

REASON_CHARS = 500
RESERVE_BYTES = 256 << 10


def release(data: Path) -> None:
    """Give back the room :meth:`RunWriter.begin` set aside (a regular file only)."""
    with suppress(FileNotFoundError):
        if stat.S_ISREG((data / RESERVE).lstat().st_mode):
            (data / RESERVE).unlink()


def reason_of(exc: BaseException) -> str:
    """One line: the exception's type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return (f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__)[:REASON_CHARS]


@dataclass(frozen=True)
class RunSetup:
    """What a run writes with: its identity, its settings as JSON (recorded in the
    manifest and the ``runs`` row; ``seed`` and ``shard_rows`` are read from it), the
    image id per ecosystem, and the dedup index, empty (the writer fills it from the
    dataset)."""

    identity: RunIdentity
    settings: dict
    images: Mapping[str, str | None]
    index: DedupIndex


class RunWriter:
    """One run's writes into a dataset opened by :func:`writing_run`."""

    def __init__(self, data: Path, manifest: Manifest, setup: RunSetup, repair: bool,
                 warn: Warn) -> None:
        identity, images, index = setup.identity, setup.images, setup.index
        self.data, self.manifest, self.identity = data, manifest, identity
        self.settings, self.images, self.repair, self.warn = setup.settings, images, repair, warn
        self.recorder = Recorder(identity, images, index)
        self.entry: RunEntry | None = None
        self.writer: ShardWriter | None = None
        self.write_s = 0.0
        """Seconds spent recording outcomes and committing them."""
        with keyboard_interrupts():  # Ctrl-C while DuckDB reads the dataset is still Ctrl-C
            con = connect(data, warn=warn)
            try:
                self.held = held_candidates(con, identity.config_hash)
                """Candidates settled in the dataset under this config: not run again."""
                index.add_all(indexed_tasks(con))
            finally:
                con.close()

    @property
    def run_id(self) -> str:
        return self.identity.run_id

    def keep_ecosystems(self, folders: Iterable[tuple[str, str, Path]]) -> int:
        """Snapshot each user ecosystem ``(name, digest, folder)`` the run uses into the
        dataset (:mod:`tasks.dataset.store.snapshots`), before any task that references
        it is committed; returns how many were new."""
        return sum(store_snapshot(self.data, name, digest, folder)
                   for name, digest, folder in folders)

    def begin(self) -> None:
        """Record the run as ``running`` in the manifest (saved now)."""
        entry = begin(self.manifest, self.run_id, self.settings,
                           self.identity.config_hash, self.identity.flow_run_id,
                           repair=self.repair)
        save_manifest(self.data, self.manifest)
        self.entry = entry  # registered: from now on a failure marks it
        size = max(RESERVE_BYTES, 2 * (self.data / MANIFEST).stat().st_size)
        create(self.data / RESERVE, bytes(size))
        self.writer = ShardWriter(self.data, self.manifest, self.run_id,
                                  max_rows=self.settings["shard_rows"])

    def record(self, outcome: Outcome) -> bool:
        """Write ``outcome``'s rows (deduplicated, stamped); True when a task was written."""
        assert self.writer is not None, "begin() first"
        t0 = time.perf_counter()
        group = self.recorder.record(outcome)
        self.writer.add_group(group)
        self.write_s += time.perf_counter() - t0
        return any(table == "tasks" for table, _ in group)

    def finish(self, candidates: int) -> RunTally:
        """Commit what is buffered and finish the run (see the module docstring);
        ``candidates``: how many the run's settings planned.  Returns the run's tally."""
        assert self.writer is not None and self.entry is not None, "begin() first"
        t0 = time.perf_counter()
        self.writer.commit()
        self.write_s += time.perf_counter() - t0
        with keyboard_interrupts():
            con = connect(self.data, warn=self.warn)
            try:
                counts = tally(con, self.run_id)
                if counts.errored:
                    self.warn(f"{counts.errored} candidates errored (infrastructure); the "
                              "run stays unfinished")
                    return counts
                self.entry.status = "complete"  # committed with the runs row, in one update
                row = unless_recorded(con, self.run_id, [
                    ("runs", self._runs_row(candidates, counts))])
            finally:
                con.close()
        if row:
            self.writer.add_group(row)
            self.writer.commit()
        else:  # a repair of a run whose runs row stands: only the status changes
            save_manifest(self.data, self.manifest)
        return counts

    @property
    def no_run_unfinished(self) -> bool:
        """Every run of the dataset is complete: nothing is left to resume."""
        return all(e.status == "complete" for e in self.manifest.runs.values())

    def _runs_row(self, candidates: int, counts: RunTally) -> RunRow:
        assert self.entry is not None
        return RunRow(
            run_id=self.run_id, flow_run_id=self.identity.flow_run_id,
            config_hash=self.identity.config_hash,
            settings_json=json.dumps({**self.settings, "images": dict(self.images)}),
            generator_version=generator_version(), status="complete",
            started_at=datetime.fromisoformat(self.entry.started_at),
            finished_at=datetime.now(UTC), resumes=self.entry.resumes,
            candidates=candidates, skipped=candidates - counts.attempts,
            accepted=counts.accepted, rejected=counts.attempts - counts.accepted,
            duplicates=counts.duplicates,
            provenance=self.identity.provenance(seed=self.settings["seed"], image_id=None))

    def fail(self, exc: BaseException) -> None:
        """Mark the run ``failed`` in the committed manifest, if it began and is running;
        a repair's run (complete before it, its lost candidates recorded as ``pending``
        for the next repair) is ``complete`` again instead."""
        if self.entry is None:
            return
        release(self.data)  # a full disk: the room set aside holds the failed manifest
        with suppress(DatasetError):  # an unreadable manifest: the error at hand says more
            committed = load_manifest(self.data)
            entry = committed.runs.get(self.run_id)
            if entry is not None and entry.status == "running":
                entry.status, entry.reason = (("complete", None) if self.repair
                                              else ("failed", reason_of(exc)))
                save_manifest(self.data, committed)


@contextmanager
def writing_run(data: Path, setup: RunSetup, repair: bool = False,
                warn: Warn = lambda _: None) -> Iterator[RunWriter]:
    """The dataset at ``data`` held for one run (see the module docstring) with ``setup``;
    ``repair``: the run re-runs candidates ``taskfactory repair`` lost (not a resume).
    DatasetError, before anything is written, for a folder a writer must refuse."""
    with open_for_writing(data, warn=warn) as manifest:
        run = RunWriter(data, manifest, setup, repair, warn)
        try:
            yield run
        except BaseException as exc:
            run.fail(exc)
            raise
        finally:
            release(data)
