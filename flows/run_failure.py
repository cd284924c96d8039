"""A run that fails for any reason is left ``failed`` in the manifest, never ``running``.

The factory flow opens the dataset with :func:`failed_on_error` next to the lock and
names the run once it is registered in the manifest.  When the flow then raises — an
engine or API error, a Dask worker that cannot load the tasks, Ctrl-C — the run's entry
in the *committed* manifest becomes ``failed`` with the exception as its reason, saved
while the lock is still held; nothing else of the manifest changes, so no uncommitted
shard is listed.  A kill (SIGKILL, a lost machine) leaves it ``running``; ``--resume``
continues both.
"""

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tasks.dataset.manifest import DatasetError, load_manifest, save_manifest

REASON_CHARS = 500


@dataclass
class RunRecord:
    run_id: str | None = None
    """Set once the run is registered in the manifest; before that nothing is marked."""


def reason_of(exc: BaseException) -> str:
    """One line: the exception's type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return (f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__)[:REASON_CHARS]


@contextmanager
def failed_on_error(data: Path) -> Iterator[RunRecord]:
    """Yields a :class:`RunRecord`; if the block raises, marks its run ``failed``."""
    run = RunRecord()
    try:
        yield run
    except BaseException as exc:
        with suppress(DatasetError):  # an unreadable manifest: the error at hand says more
            committed = load_manifest(data)
            entry = committed.runs.get(run.run_id) if run.run_id else None
            if entry is not None and entry.status == "running":
                entry.status, entry.reason = "failed", reason_of(exc)
                save_manifest(data, committed)
        raise
