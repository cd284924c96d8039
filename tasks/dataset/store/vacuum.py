"""``taskfactory vacuum``: the only way files leave a dataset folder.

What it may delete, when last modified longer ago than the retention window: shard files
the manifest does not list (a killed writer's commit; recorded ``abandoned`` or not),
temp files of atomic writes (``.<name>.tmp`` in the folder, the table folders and
``plots/``), ecosystem snapshots no listed ``tasks`` row references and the temp folders
of unfinished ones (:mod:`tasks.dataset.store.snapshots`), write probes and the room an
interrupted run set aside, and — only when asked — quarantine folders.  Only regular
files and real folders are deleted, through
:mod:`tasks.dataset.store.paths`: a link (a ``_quarantine`` or table folder pointing
elsewhere) is neither followed nor deleted.
:func:`vacuum` opens the dataset for writing first, so a folder whose manifest cannot
account for its shards (missing or older) or with corrupt shards is refused before
anything is deleted: there, unlisted shards may be the only copy of committed data.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks.dataset.store.commits import quarantine_folders, shard_files
from tasks.dataset.store.folder import RESERVE
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.manifest import Manifest, save_manifest
from tasks.dataset.store.paths import folder_if_real, regular_files, remove, size
from tasks.dataset.store.snapshots import FOLDER as SNAPSHOTS
from tasks.dataset.store.snapshots import referenced, snapshots, temp_folders

_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> int:
    """Seconds in ``30s``, ``15m``, ``12h``, ``7d`` or ``2w``; ValueError otherwise."""
    m = _DURATION.match(text.strip())
    if m is None:
        raise ValueError(f"expected a number and a unit (s, m, h, d, w) such as 7d, got "
                         f"{text!r}")
    return int(m[1]) * _UNIT[m[2]]


@dataclass(frozen=True)
class Doomed:
    path: Path
    bytes: int
    age_s: float
    why: str
    rel: str = ""
    """``path`` relative to the dataset folder."""


def _found(data_dir: Path, manifest: Manifest, quarantine: bool) -> list[tuple[str, str]]:
    """(relative path, why) of every file a vacuum may delete, whatever its age: regular
    files and real folders only (a link or special file is never followed or deleted)."""
    listed = {s.path for s in manifest.shards}
    found = [(f.path, "temp file" if f.temp else "unlisted shard")
             for f in shard_files(data_dir) if f.path not in listed]
    for rel in ("", "plots"):
        folder = folder_if_real(data_dir, rel) if rel else data_dir
        names = sorted(regular_files(folder)) if folder is not None else []
        found += [(f"{rel}/{n}".lstrip("/"), "temp file") for n in names
                  if n.startswith(".") and n.endswith(".tmp")]
        if not rel:
            found += [(n, "write probe") for n in names if n.startswith(".write-test-")]
            found += [(n, "space set aside by an interrupted run") for n in names
                      if n == RESERVE]
    keep = referenced(data_dir, manifest)
    found += [(f"{SNAPSHOTS}/{n}", "unreferenced ecosystem snapshot")
              for n in snapshots(data_dir) if n not in keep]
    found += [(f"{SNAPSHOTS}/{n}", "temp folder") for n in temp_folders(data_dir)]
    if quarantine:
        found += [(rel, "quarantine") for rel in quarantine_folders(data_dir)]
    return found


def to_delete(data_dir: Path, manifest: Manifest, older_than_s: int,
              quarantine: bool = False) -> list[Doomed]:
    """What a vacuum deletes: unreferenced files (and quarantine folders if asked) whose
    last change is older than ``older_than_s`` seconds."""
    now = time.time()
    doomed = []
    for rel, why in _found(data_dir, manifest, quarantine):
        path = data_dir / rel
        age = now - path.lstat().st_mtime
        if age >= older_than_s:
            doomed.append(Doomed(path, size(path), age, why, rel))
    return doomed


def delete(data_dir: Path, manifest: Manifest, doomed: list[Doomed]) -> None:
    """Delete ``doomed`` and forget them in ``manifest.abandoned`` (the caller saves it)."""
    for d in doomed:
        remove(data_dir, d.rel)
    gone = {d.rel for d in doomed}
    manifest.abandoned = [p for p in manifest.abandoned if p not in gone]


def vacuum(data_dir: Path, older_than_s: int, quarantine: bool = False, dry_run: bool = False,
           announce: Callable[[Doomed], object] = lambda _: None) -> list[Doomed]:
    """Open ``data_dir`` for writing (DatasetError where a writer must refuse), pass each
    file :func:`to_delete` finds to ``announce``, then delete them (not on ``dry_run``)
    and save the manifest; returns them."""
    with open_for_writing(data_dir) as manifest:
        doomed = to_delete(data_dir, manifest, older_than_s, quarantine)
        for d in doomed:
            announce(d)
        if doomed and not dry_run:
            delete(data_dir, manifest, doomed)
            save_manifest(data_dir, manifest)
    return doomed
