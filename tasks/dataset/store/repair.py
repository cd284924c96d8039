"""Repairing a dataset folder: quarantine corrupt commits, rebuild a missing or older
manifest from the shards' commit records, and say which candidates must run again.

:func:`plan_repair` only reads; :func:`apply_repair` moves files into
``<data>/_quarantine/<stamp>/`` (never deletes) and then saves the new manifest.

- A listed commit with a missing, truncated or changed shard is quarantined whole (a
  candidate's rows are never split); its candidates (the manifest's commit entry, else a
  sibling's commit record, else the rows of an intact ``attempts`` shard) become
  ``pending`` for their run.
- When the manifest is missing, unreadable or older than the shards, unlisted commits are
  adopted if complete (every shard its record names is on disk and matches the sha256 in
  its name) and the latest written of their commit number: a killed writer's commit
  shares its number with the commit written after it, so it is never adopted alongside
  the one that ran its candidates again.  Incomplete commits (a killed writer's) stay
  where they are, recorded as ``abandoned``; an unlisted shard whose bytes do not match
  its name is quarantined with its commit.
- The candidates of quarantined commits, and those of unadopted commits that no kept
  commit holds, are ``pending`` for a complete run (run again by ``taskfactory repair``;
  the flow skips any that its own rule finds held); those of an unfinished run are left
  to ``run --resume``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from tasks.dataset.store.checksums import problems, sha256_of
from tasks.dataset.store.commits import (
    QUARANTINE,
    CommitRecord,
    ShardFile,
    accounting_problem,
    listed_groups,
    odd_files,
    read_record,
    shard_files,
    unaccounted,
)
from tasks.dataset.store.manifest import (
    MANIFEST,
    CommitEntry,
    Manifest,
    ShardEntry,
    UnreadableManifest,
    load_manifest,
    save_manifest,
)
from tasks.dataset.store.paths import inside, move, open_file
from tasks.dataset.store.snapshots import odd_snapshot_entries


@dataclass
class RepairPlan:
    manifest: Manifest
    """The manifest to save: what the dataset holds after the repair."""
    quarantine: list[str] = field(default_factory=list)
    """Relative paths to move into the quarantine folder."""
    rebuilt: bool = False
    adopted: int = 0
    """Unlisted commits adopted into the rebuilt manifest."""
    unfinished: dict[str, int] = field(default_factory=dict)
    """Unfinished run -> candidates lost that its ``--resume`` will run again."""
    notes: list[str] = field(default_factory=list)

    fixed: bool = False
    """Entries listed twice, or pending for an unknown run, were dropped."""

    @property
    def changes(self) -> bool:
        return bool(self.quarantine or self.rebuilt or self.fixed or self.manifest.pending)


def _candidates_of(data_dir: Path, group: list[ShardEntry], old: Manifest) -> list[str] | None:
    """The candidates whose rows a listed commit holds, or None when nothing tells."""
    numbers = {e.commit for e in group}
    for c in old.commits:
        if c.number in numbers:
            return c.candidates
    for e in group:
        record = read_record(data_dir, e.path)
        if record is not None:
            return record.candidates
    attempts = [e for e in group if e.table == "attempts"]
    if attempts and not problems(data_dir, attempts):
        return _candidate_ids(data_dir, attempts[0].path)
    return None


def _complete(data_dir: Path, record: CommitRecord, files: list[ShardFile]) -> bool:
    """Every shard the record names is on disk, and its bytes match its name."""
    if {f.table: f.seq for f in files} != record.seqs or len(files) != len(record.seqs):
        return False
    return all(f.sha16 and sha256_of(data_dir, f.path)[:16] == f.sha16 for f in files)


def _candidate_ids(data_dir: Path, rel: str) -> list[str]:
    """The ``candidate_id`` column of an intact ``attempts`` shard."""
    with open_file(data_dir, rel) as f:
        return pq.read_table(f, columns=["candidate_id"]).column(0).to_pylist()


def _entry(data_dir: Path, f: ShardFile, number: int) -> ShardEntry:
    with open_file(data_dir, f.path) as file:
        meta = pq.read_metadata(file)
        size = os.fstat(file.fileno()).st_size
    version = (meta.schema.to_arrow_schema().metadata or {}).get(b"schema_version", b"1")
    return ShardEntry(table=f.table, path=f.path, rows=meta.num_rows,
                      sha256=sha256_of(data_dir, f.path), run_id=f.run_id, bytes=size,
                      schema_version=int(version), commit=number)


def _old_manifest(data_dir: Path, plan: RepairPlan) -> Manifest | None:
    if not os.path.lexists(data_dir / MANIFEST):
        if shard_files(data_dir):
            plan.notes.append(f"no {MANIFEST}: rebuilding it from the shards' commit records")
            return None
        return Manifest()  # an empty folder: nothing to rebuild
    try:
        return load_manifest(data_dir)
    except UnreadableManifest as exc:
        plan.quarantine.append(MANIFEST)
        plan.notes.append(f"{exc}".split(";")[0] + ": quarantined, rebuilding it")
        return None


def plan_repair(data_dir: Path) -> RepairPlan:
    """What a repair of ``data_dir`` does; reads only.  DatasetError for a newer dataset."""
    plan = RepairPlan(Manifest())
    old = _old_manifest(data_dir, plan)
    base = old or Manifest()
    _once(base, plan)
    odd = odd_files(data_dir) + odd_snapshot_entries(data_dir)
    plan.notes += [f"{path} is {what}: never read, written or deleted by taskfactory; "
                   "remove it" for path, what in odd]
    new = plan.manifest
    new.runs = {k: v.model_copy() for k, v in base.runs.items()}
    new.abandoned = [p for p in base.abandoned if inside(data_dir, p)]
    lost: dict[str, set[str]] = defaultdict(set)
    bad = problems(data_dir, base.shards)
    commits = {c.number: c for c in base.commits}
    for group in listed_groups(base):
        if not any(e.path in bad for e in group):
            new.shards += group
            new.commits += [commits[group[0].commit]] if group[0].commit in commits else []
            continue
        candidates = _candidates_of(data_dir, group, base)
        for e in group:
            if e.path in bad:
                plan.notes.append(f"corrupt shard {e.path} ({bad[e.path]})")
            if inside(data_dir, e.path):  # a link is moved as a link; none is followed
                plan.quarantine.append(e.path)
        if candidates is None:
            plan.notes.append(f"the commit of {group[0].path} names no candidates (written "
                              "before format 3): a run with the same seed and settings runs "
                              "them again")
        lost[group[0].run_id].update(candidates or ())
    files = unaccounted(data_dir, base)
    plan.rebuilt = old is None or accounting_problem(data_dir, base, files) is not None
    unadopted: dict[str, set[str]] = defaultdict(set)
    if plan.rebuilt:
        _adopt(data_dir, plan, files, unadopted)
    else:
        new.abandoned += [f.path for f in files]
    held = _held(data_dir, new)
    for run_id in sorted(set(lost) | set(unadopted)):
        # the flow skips what is held again (its own rule); unadopted commits' candidates
        # are often held already: run again by the writer after the one killed
        missing = sorted(lost[run_id] | (unadopted[run_id] - held))
        entry = new.runs.get(run_id)
        recorded = any(e.table == "runs" and e.run_id == run_id for e in new.shards)
        if entry is None or (not missing and recorded):
            continue
        if entry.status == "complete":
            new.pending[run_id] = missing
        elif missing:
            plan.unfinished[run_id] = len(missing)
    for run_id, ids in base.pending.items():  # a repair that was interrupted
        if run_id not in new.runs:
            plan.notes.append(f"candidates pending for run {run_id}, which the manifest does "
                              "not have: dropped")
            plan.fixed = True
            continue
        new.pending[run_id] = sorted(set(new.pending.get(run_id, [])) | set(ids))
    return plan


def _once(manifest: Manifest, plan: RepairPlan) -> None:
    """Keep the first entry of each shard listed more than once."""
    twice = manifest.duplicates()
    if twice:
        manifest.shards = manifest.once()
        plan.notes += [f"{path} was listed twice (its rows read twice): one entry kept"
                       for path in twice]
        plan.fixed = True


def _held(data_dir: Path, manifest: Manifest) -> set[str]:
    """The candidates the manifest's commits hold (older commits: read from ``attempts``)."""
    held = {c for commit in manifest.commits for c in commit.candidates}
    for e in manifest.listed("attempts"):
        if e.commit is None:
            held.update(_candidate_ids(data_dir, e.path))
    return held


def _adopt(data_dir: Path, plan: RepairPlan, files: list[ShardFile],
           lost: dict[str, set[str]]) -> None:
    """Adopt the complete unlisted commits into ``plan.manifest``.

    A manifest lists each commit number once, and a killed writer's commit shares its
    number with the next writer's first commit (written after it), so per number only
    the latest-written record can have been committed: earlier ones, and any number the
    manifest lists already, stay abandoned.  A latest one that is incomplete is not
    adopted (its candidates go to ``lost``); one with a shard whose bytes do not match
    its name is quarantined as well."""
    new = plan.manifest
    commits: dict[str, tuple[CommitRecord, list[ShardFile]]] = {}
    for f in files:
        record = None if f.temp else read_record(data_dir, f.path)
        if record is not None:
            commits.setdefault(record.model_dump_json(), (record, []))[1].append(f)
    listed = {c.number for c in new.commits}
    latest: dict[int, tuple[CommitRecord, list[ShardFile]]] = {}
    for record, group in commits.values():
        now = latest.get(record.number)
        if record.number not in listed and (now is None or record.written_at > now[0].written_at):
            latest[record.number] = (record, group)
    for number in sorted(latest):
        record, group = latest[number]
        if not _complete(data_dir, record, group):
            if any(f.sha16 and sha256_of(data_dir, f.path)[:16] != f.sha16 for f in group):
                plan.notes.append(f"corrupt unlisted shard in the commit of {group[0].path}")
                plan.quarantine += [f.path for f in group]
            lost[record.run_id].update(record.candidates)
            continue
        order = {t: i for i, t in enumerate(record.seqs)}
        new.shards += [_entry(data_dir, f, number)
                       for f in sorted(group, key=lambda f: order[f.table])]
        new.commits.append(CommitEntry(number=number, run_id=record.run_id,
                                       candidates=record.candidates))
        if record.run is not None:
            known = [new.runs[record.run_id]] if record.run_id in new.runs else []
            new.runs[record.run_id] = max([record.run, *known], key=lambda r: (
                r.status == "complete", r.resumes, len(r.flow_run_ids)))
        plan.adopted += 1
    kept = {e.path for e in new.shards} | set(plan.quarantine)
    new.abandoned = sorted(set(new.abandoned) | {f.path for f in files if f.path not in kept})
    skipped = [f for f in files if not f.temp and f.sha16 is None]
    if skipped:
        plan.notes.append(f"{len(skipped)} unlisted shards written before format 3 carry no "
                          "commit record and were not adopted (restore the manifest from a "
                          "backup to use them)")


def apply_repair(data_dir: Path, plan: RepairPlan, stamp: str) -> Path | None:
    """Move the quarantined files into ``_quarantine/<stamp>/`` (same relative paths), then
    save the new manifest; returns the quarantine folder (None when nothing moved)."""
    for rel in plan.quarantine:
        move(data_dir, rel, f"{QUARANTINE}/{stamp}/{rel}")
    save_manifest(data_dir, plan.manifest)
    return data_dir / QUARANTINE / stamp if plan.quarantine else None


def rerun_done(data_dir: Path, run_id: str) -> None:
    """Forget ``run_id``'s ``pending`` candidates once they ran again (saved at once)."""
    manifest = load_manifest(data_dir)
    manifest.pending.pop(run_id, None)
    save_manifest(data_dir, manifest)


def existing_shards(data_dir: Path) -> int:
    """Shard files in the table folders (for the report)."""
    return sum(not f.temp for f in shard_files(data_dir))
