"""What makes a folder a dataset: the marker ``_taskfactory`` the factory writes beside
every manifest it saves (:func:`tasks.dataset.store.manifest.save_manifest`).

A folder is a dataset when it holds the marker (a regular file), or — written before
the marker existed — a ``_manifest.json`` this code reads (the marker is added with the
next manifest saved).  Every command that takes
``--data`` checks this before it reads or writes anything in the folder
(:func:`check_dataset`): a folder that is neither is refused with one line, however
little it holds, so a user's folder (or ``/etc``) is never read, locked or written.  A
missing folder, or an empty one (a ``.lock`` alone counts as empty), is a new dataset
for a writer; readers say there is no dataset.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tasks.dataset.store.errors import NotADataset, UnreadableManifest
from tasks.dataset.store.manifest import MANIFEST, MARKER, load_manifest
from tasks.dataset.store.paths import kind

LOCK = ".lock"
RESERVE = ".space-reserve"
"""Room a running run sets aside to record its failure on a full disk
(:mod:`tasks.dataset.run_writer`); a killed run leaves it, the next one replaces it and
``vacuum`` deletes it."""


def _mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _empty(data: Path) -> bool:
    with os.scandir(data) as entries:
        return all(e.name == LOCK for e in entries)


def check_dataset(data: Path, missing_ok: bool = False) -> None:
    """Nothing when ``data`` is a dataset, an empty folder or (``missing_ok``: a writer)
    missing; else NotADataset naming the fix.  Reads the manifest only of a folder with no
    marker (UnreadableManifest and newer-format errors of a marked one are the caller's
    to meet when it loads it); lists the folder only when it has neither."""
    if _mode(data) is None:
        if missing_ok:
            return
        raise NotADataset(f"no dataset at {data}; create one with `taskfactory run --data "
                          f"{data}`")
    if not data.is_dir():
        raise NotADataset(f"--data {data} is not a folder; name a dataset's folder")
    marker = _mode(data / MARKER)
    if marker is not None and stat.S_ISREG(marker):
        return
    if marker is None and _mode(data / MANIFEST) is not None:
        try:
            load_manifest(data)
            return
        except UnreadableManifest as exc:
            why = f"its {MANIFEST} is not one: {exc.reason}"
    elif marker is not None:
        why = f"its {MARKER} is a {kind(marker)}, not the file taskfactory writes"
    elif _empty(data):
        return
    else:
        why = f"it holds no {MARKER} marker and no {MANIFEST}"
    raise NotADataset(f"{data} is not a taskfactory dataset ({why}); give --data a new or "
                      "empty folder, or a dataset's folder (an older dataset whose manifest "
                      f"is lost: create the file {data / MARKER}, then `taskfactory repair`)")
