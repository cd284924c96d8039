"""The writer lock of a dataset folder, and opening a folder for writing.

One writer at a time: :func:`dataset_lock` takes an exclusive POSIX record lock on
``<data>/.lock`` — only in a dataset, an empty or a new folder
(:func:`tasks.dataset.store.folder.check_dataset`, before anything is created), and only
through a regular file (a link, folder or FIFO named ``.lock`` is one line).  The kernel
releases it when the process dies, even by SIGKILL, and, unlike ``flock``, a forked child
does not share it: a sandbox child caught between fork and exec when its parent is killed
cannot keep the dataset locked.  POSIX locks do not
exclude the owning process itself, so an in-process registry does that; a holder may
*lend* the lock once, to one nested :func:`open_for_writing` in the same process (the CLI
takes the lock before Prefect starts and the flow it runs re-enters it).

:func:`open_for_writing` makes the checks every writer makes before it writes anything
(:mod:`tasks.dataset.store.manifest` states the protocol they protect).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tasks.dataset.store.checksums import require_intact
from tasks.dataset.store.commits import adopt_abandoned
from tasks.dataset.store.errors import StorageError
from tasks.dataset.store.folder import LOCK, check_dataset
from tasks.dataset.store.manifest import (
    MANIFEST,
    REPAIR_HINT,
    DatasetError,
    Manifest,
    load_manifest,
)
from tasks.dataset.store.paths import kind, writing

__all__ = ["LOCK", "dataset_lock", "holds", "open_for_writing"]


@dataclass
class _Hold:
    lend: bool
    lent: bool = False


_held: dict[Path, _Hold] = {}
"""Datasets this process holds the lock of."""
_registry = threading.Lock()


def _lock_busy(data_dir: Path) -> DatasetError:
    return DatasetError(f"another taskfactory process is writing to {data_dir}; wait for it "
                        "to finish or use another --data folder")


def _try_lock(f, data_dir: Path) -> None:
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            raise _lock_busy(data_dir) from None
        raise


@contextlib.contextmanager
def _lock_file(data_dir: Path) -> Iterator[int]:
    """``<data>/.lock`` opened (created if missing) without following a link."""
    path = data_dir / LOCK
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise StorageError.of(exc, path) from None
        fd = -1
    if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd >= 0:
            os.close(fd)
        raise DatasetError(f"{path} is a {kind(path.lstat().st_mode)}, not the lock file "
                           "taskfactory writes; remove it")
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def dataset_lock(data_dir: Path, lend: bool = False) -> Iterator[None]:
    """Hold ``data_dir``'s writer lock (creating the folder and its ``.lock`` if needed).

    Raises DatasetError at once when another process, or another holder in this process,
    has it.  ``lend``: one nested ``dataset_lock`` of this process (a flow the holder runs)
    may enter while this one holds it; a second nested one is refused like a stranger."""
    key = data_dir.resolve()
    with _registry:
        hold = _held.get(key)
        if hold is not None:
            if not hold.lend or hold.lent:
                raise _lock_busy(data_dir)
            hold.lent = True
    if hold is not None:
        try:
            yield
        finally:
            hold.lent = False
        return
    check_dataset(data_dir, missing_ok=True)
    with writing(data_dir):
        data_dir.mkdir(parents=True, exist_ok=True)
    with _lock_file(data_dir) as lock:
        with _registry:
            if key in _held:  # another thread of this process took it meanwhile
                raise _lock_busy(data_dir)
            _try_lock(lock, data_dir)
            _held[key] = _Hold(lend)
        try:
            yield
        finally:
            with _registry:
                _held.pop(key, None)


@contextlib.contextmanager
def open_for_writing(data_dir: Path, warn: Callable[[str], object] = lambda _: None
                     ) -> Iterator[Manifest]:
    """Lock ``data_dir`` for this process and yield its manifest, checked for writing.

    DatasetError (naming ``taskfactory repair``) when shard files are on disk that the
    manifest cannot account for or a listed shard is corrupt; DatasetError also when
    another writer holds the lock or the dataset is newer.  The unlisted files of one
    killed writer's commit are added to ``manifest.abandoned`` (saved with the next
    commit) and passed to ``warn``; nothing is deleted."""
    with dataset_lock(data_dir):
        manifest = load_manifest(data_dir)
        found = adopt_abandoned(data_dir, manifest)
        if found:
            warn(f"{len(found)} files of a commit an interrupted writer did not finish are "
                 f"not in the dataset ({', '.join(found)}); they are kept and never read; "
                 f"`taskfactory vacuum --data {data_dir}` removes them")
        require_intact(data_dir, manifest)
        twice = manifest.duplicates()
        if twice:
            raise DatasetError(f"{data_dir / MANIFEST} lists {twice[0]} more than once (its rows "
                               f"would be read twice); `{REPAIR_HINT.format(data=data_dir)}` "
                               "keeps one entry")
        yield manifest


def holds(data_dir: Path) -> bool:
    """Whether this process holds ``data_dir``'s writer lock."""
    with _registry:
        return data_dir.resolve() in _held
