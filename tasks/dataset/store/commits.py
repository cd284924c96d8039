"""Commit groups: shard names, the commit record each shard carries, and which shards were
committed together.

**Names.** ``<table>/part-<run>-<seq>.<sha16>.parquet``: ``seq`` numbers the run's shards
(a writer continues after the highest ``seq`` of the run anywhere in the folder, so a new
name never collides with a file on disk) and ``sha16`` is the start of the file's sha256,
so a shard that no manifest lists can still be checked.  Shards written before manifest
format 3 are named ``part-<run>-<seq>.parquet``; temp files are ``.<name>.tmp``.

**Commit record.** Every shard carries the record of its commit as Parquet key-value
metadata (``taskfactory.commit``, JSON of :class:`CommitRecord`): the commit number, the
run, the ``seq`` of each table's shard in the commit (its siblings), the candidate ids
whose rows it holds, the run's manifest entry at that commit and when it was written.
From these the manifest can be rebuilt (:mod:`tasks.dataset.store.repair`).

**Groups.** Listed shards of manifest format 3 are grouped by their ``commit`` number.
Older manifests have none, but a commit wrote its tables in ``TABLES`` order with
consecutive ``seq`` numbers and every candidate commit holds an ``attempts`` shard (a
``runs`` row is committed alone), so a group ends where the table order or the ``seq``
run breaks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from schemas.records import TABLES
from tasks.dataset.store.manifest import (
    MANIFEST,
    REPAIR_HINT,
    DatasetError,
    Manifest,
    RunEntry,
    ShardEntry,
)
from tasks.dataset.store.paths import folder_if_real, is_name, odd_entries, open_file, regular_files

META_KEY = b"taskfactory.commit"
QUARANTINE = "_quarantine"
_NAME = re.compile(r"^part-(?P<run>.+)-(?P<seq>\d+)(?:\.(?P<sha>[0-9a-f]{16}))?\.parquet$")
_ORDER = {t: i for i, t in enumerate(TABLES)}


@dataclass(frozen=True)
class ShardFile:
    """A shard or shard temp file found on disk."""

    path: str
    """Relative to the dataset folder."""
    table: str
    run_id: str
    seq: int
    sha16: str | None
    """None for names before format 3 and for temp files."""
    temp: bool


def parse(rel: str) -> ShardFile | None:
    """The shard (or temp) file at relative path ``table/name``, or None if not one."""
    table, _, name = rel.rpartition("/")
    table = table.rpartition("/")[2]
    temp = name.startswith(".") and name.endswith(".tmp")
    m = _NAME.match(name[1:-4] if temp else name)
    if table not in TABLES or m is None:
        return None
    return ShardFile(rel, table, m["run"], int(m["seq"]), None if temp else m["sha"], temp)


def shard_name(run_id: str, seq: int, sha256: str) -> str:
    return f"part-{run_id}-{seq:05d}.{sha256[:16]}.parquet"


def shard_files(data_dir: Path, folder: str = "") -> list[ShardFile]:
    """Every shard and shard temp file in the table folders of ``data_dir / folder``:
    regular files with shard names, in real table folders (links, special files and names
    that are not UTF-8 are never taken for shards: :func:`odd_files` lists them)."""
    found = []
    for table in TABLES:
        base = folder_if_real(data_dir, f"{folder}/{table}" if folder else table)
        if base is not None:
            prefix = str(base.relative_to(data_dir))
            found += [f for name in sorted(regular_files(base))
                      if (f := parse(f"{prefix}/{name}")) is not None]
    return found


def quarantine_folders(data_dir: Path) -> list[str]:
    """The real folders in ``_quarantine/`` (relative paths), oldest name first."""
    base = folder_if_real(data_dir, QUARANTINE)
    if base is None:
        return []
    with os.scandir(base) as entries:
        return sorted(f"{QUARANTINE}/{e.name}" for e in entries
                      if e.is_dir(follow_symlinks=False) and is_name(e.name))


def odd_files(data_dir: Path) -> list[tuple[str, str]]:
    """(path, what it is) of each entry a reader leaves alone in the dataset's folders —
    links, FIFOs, sockets, devices, names that are not UTF-8 — for ``repair`` to report."""
    found = []
    for rel in ["", "plots", QUARANTINE, *TABLES]:
        folder = folder_if_real(data_dir, rel) if rel else data_dir
        if folder is not None:
            found += [(f"{rel}/{name}".lstrip("/"), why) for name, why in odd_entries(folder)]
    return found


def next_seq(data_dir: Path, manifest: Manifest, run_id: str) -> int:
    """One more than the highest ``seq`` of ``run_id`` listed or on disk (quarantine too)."""
    seqs = [f.seq for f in (parse(s.path) for s in manifest.shards) if f and f.run_id == run_id]
    on_disk = [*shard_files(data_dir)]
    for sub in quarantine_folders(data_dir):
        on_disk += shard_files(data_dir, sub)
    seqs += [f.seq for f in on_disk if f.run_id == run_id]
    return max(seqs, default=0) + 1


class CommitRecord(BaseModel):
    number: int
    run_id: str
    seqs: dict[str, int]
    """table -> seq of its shard in this commit."""
    candidates: list[str]
    run: RunEntry | None
    written_at: str

    def sibling_of(self, f: ShardFile) -> bool:
        return f.run_id == self.run_id and self.seqs.get(f.table) == f.seq


def read_record(data_dir: Path, rel: str) -> CommitRecord | None:
    """The commit record in a shard's footer; None when unreadable or absent (older), or
    when the path is a link or special file."""
    try:
        with open_file(data_dir, rel) as f:
            meta = pq.read_schema(f).metadata or {}
        raw = meta.get(META_KEY)
        return None if raw is None else CommitRecord.model_validate_json(raw)
    except (OSError, ValueError, ValidationError, TypeError, pa.ArrowException):
        return None


def listed_groups(manifest: Manifest) -> list[list[ShardEntry]]:
    """The listed shards grouped by the commit that listed them, in commit order."""
    groups: list[list[ShardEntry]] = []
    prev: ShardEntry | None = None
    for entry in manifest.shards:
        if prev is None or not _same_commit(prev, entry):
            groups.append([])
        groups[-1].append(entry)
        prev = entry
    return groups


def _same_commit(a: ShardEntry, b: ShardEntry) -> bool:
    if a.commit is not None or b.commit is not None:
        return a.commit == b.commit
    fa, fb = parse(a.path), parse(b.path)
    return (fa is not None and fb is not None and fa.run_id == fb.run_id
            and fb.seq == fa.seq + 1 and _ORDER[fa.table] < _ORDER[fb.table]
            and "runs" not in (fa.table, fb.table))


def unaccounted(data_dir: Path, manifest: Manifest) -> list[ShardFile]:
    """Shard and temp files on disk that the manifest neither lists nor knows abandoned."""
    known = {s.path for s in manifest.shards} | set(manifest.abandoned)
    return [f for f in shard_files(data_dir) if f.path not in known]


def _one_commit(data_dir: Path, manifest: Manifest, files: list[ShardFile]) -> bool:
    """Whether ``files`` can be the one commit a killed writer left: one run, ``seq``
    numbers after every listed one of that run and within one commit's span, and every
    readable commit record the same one, naming each of them."""
    runs = {f.run_id for f in files}
    if len(runs) != 1:
        return False
    run_id = runs.pop()
    listed = [f.seq for f in (parse(s.path) for s in manifest.shards) if f and f.run_id == run_id]
    seqs = [f.seq for f in files]
    if min(seqs) <= max(listed, default=0) or max(seqs) - min(seqs) >= len(TABLES):
        return False
    records = {r.model_dump_json(): r for f in files if not f.temp
               and (r := read_record(data_dir, f.path)) is not None}
    if len(records) > 1:
        return False
    return not records or all(next(iter(records.values())).sibling_of(f) for f in files)


def accounting_problem(data_dir: Path, manifest: Manifest,
                       files: list[ShardFile] | None = None) -> str | None:
    """Why the manifest cannot account for the unlisted shard files on disk (no manifest,
    or more of them than the one commit a killed writer leaves), naming the repair
    command; None when it can.  ``files``: :func:`unaccounted`, if known already."""
    files = unaccounted(data_dir, manifest) if files is None else files
    if not files:
        return None
    hint = f"rebuild it from the shards with `{REPAIR_HINT.format(data=data_dir)}`"
    if not (data_dir / MANIFEST).exists():
        return f"{data_dir} holds {len(files)} shard files but no {MANIFEST}; {hint}"
    if not _one_commit(data_dir, manifest, files):
        return (f"{data_dir} holds {len(files)} shard files that {MANIFEST} does not list, "
                "more than the one commit an interrupted writer can leave (is the manifest "
                f"older than the shards?); {hint}")
    return None


def adopt_abandoned(data_dir: Path, manifest: Manifest) -> list[str]:
    """Record the unlisted files of one killed writer's commit in ``manifest.abandoned``
    (in memory) and return them; DatasetError (:func:`accounting_problem`) when the
    unlisted files are more than that."""
    files = unaccounted(data_dir, manifest)
    problem = accounting_problem(data_dir, manifest, files)
    if problem:
        raise DatasetError(problem)
    paths = [f.path for f in files]
    manifest.abandoned.extend(paths)
    return paths
