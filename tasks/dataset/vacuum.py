"""``taskfactory vacuum``: the only way files leave a dataset folder.

What it may delete, when last modified longer ago than the retention window: shard files
the manifest does not list (a killed writer's commit; recorded ``abandoned`` or not),
temp files of atomic writes (``.<name>.tmp`` in the folder, the table folders and
``plots/``) and write probes, and — only when asked — quarantine folders.
:func:`vacuum` opens the dataset for writing first, so a folder whose manifest cannot
account for its shards (missing or older) or with corrupt shards is refused before
anything is deleted: there, unlisted shards may be the only copy of committed data.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks.dataset.commits import QUARANTINE, shard_files
from tasks.dataset.lock import open_for_writing
from tasks.dataset.manifest import Manifest, save_manifest

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


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def to_delete(data_dir: Path, manifest: Manifest, older_than_s: int,
              quarantine: bool = False) -> list[Doomed]:
    """What a vacuum deletes: unreferenced files (and quarantine folders if asked) whose
    last change is older than ``older_than_s`` seconds."""
    listed = {s.path for s in manifest.shards}
    found: list[tuple[Path, str]] = [
        (data_dir / f.path, "temp file" if f.temp else "unlisted shard")
        for f in shard_files(data_dir) if f.path not in listed]
    for folder in (data_dir, data_dir / "plots"):
        found += [(p, "temp file") for p in sorted(folder.glob(".*.tmp")) if p.is_file()]
    found += [(p, "write probe") for p in sorted(data_dir.glob(".write-test-*"))]
    if quarantine and (data_dir / QUARANTINE).is_dir():
        found += [(p, "quarantine") for p in sorted((data_dir / QUARANTINE).iterdir())]
    now = time.time()
    doomed = []
    for path, why in found:
        age = now - path.stat().st_mtime
        if age >= older_than_s:
            doomed.append(Doomed(path, _size(path), age, why))
    return doomed


def delete(data_dir: Path, manifest: Manifest, doomed: list[Doomed]) -> None:
    """Delete ``doomed`` and forget them in ``manifest.abandoned`` (the caller saves it)."""
    for d in doomed:
        if d.path.is_dir():
            shutil.rmtree(d.path)
        else:
            d.path.unlink(missing_ok=True)
    gone = {str(d.path.relative_to(data_dir)) for d in doomed}
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
