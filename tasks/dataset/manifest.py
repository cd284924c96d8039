"""The dataset manifest: the commit log of a dataset folder.

``<data>/_manifest.json`` lists every committed shard (table, path, rows, bytes, sha256,
run id, schema version, commit number), every commit (its number, run and candidate ids)
and every run's state (``running`` until its last shard and its ``runs`` row are
committed, then ``complete``; ``failed``, with the reason, when the flow raised).
Protocol:

1. a commit's shards are written to hidden temp names, fsynced and renamed into place;
   each carries its commit record (:mod:`tasks.dataset.commits`), so the log can be rebuilt;
2. the manifest is rewritten atomically (temp, fsync, rename, fsync the folder) *after*
   the shards it adds, so a shard is committed exactly when the manifest lists it;
3. readers trust only listed shards whose sha256 matches (:mod:`tasks.dataset.checksums`).

**The manifest is never a reason to delete.**  A writer never removes a file: shard files
the manifest does not list are never read, and those of the one commit a killed writer
can leave are recorded as ``abandoned`` by the next writer (``taskfactory vacuum`` is the
only command that deletes).  A folder whose unlisted shards are more than that one commit
(no manifest, or an older one) or whose listed shards are corrupt is refused by every
writer, naming ``taskfactory repair`` (:mod:`tasks.dataset.lock` makes those checks and
holds the one-writer lock).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from schemas.records import SCHEMA_VERSION

MANIFEST = "_manifest.json"
FORMAT = 3
"""1: schema version 1.  2: + bytes and schema version per shard, runs.  3: + commits
(shard ``commit`` numbers, candidate ids per commit), ``abandoned``, ``pending``."""
REPAIR_HINT = "taskfactory repair --data {data}"


class DatasetError(Exception):
    """A dataset that cannot be used as asked; the message names the problem and the fix."""


class UnreadableManifest(DatasetError):
    """The manifest file exists but is not a manifest (``taskfactory repair`` rebuilds it)."""


class ShardEntry(BaseModel):
    table: str
    path: str
    """Relative to the dataset folder."""
    rows: int
    sha256: str
    run_id: str
    bytes: int | None = None
    """None only in manifests written by schema version 1."""
    schema_version: int = 1
    commit: int | None = None
    """The number of the commit that listed it; None in manifests before format 3."""


class CommitEntry(BaseModel):
    number: int
    run_id: str
    candidates: list[str]
    """The candidates whose rows the commit holds (none for a ``runs`` row)."""


class RunEntry(BaseModel):
    config_hash: str
    settings: dict
    started_at: str
    status: Literal["running", "complete", "failed"] = "running"
    """``running`` also after a kill; ``failed`` when the flow raised.  Both can be resumed."""
    reason: str | None = None
    """Why a ``failed`` run stopped: the exception's type and message."""
    resumes: int = 0
    flow_run_ids: list[str] = []


class Manifest(BaseModel):
    format: int = FORMAT
    schema_version: int = SCHEMA_VERSION
    shards: list[ShardEntry] = []
    commits: list[CommitEntry] = []
    runs: dict[str, RunEntry] = {}
    abandoned: list[str] = []
    """Unlisted shard and temp files of killed writers (relative paths): never read, kept
    until ``taskfactory vacuum`` removes them."""
    pending: dict[str, list[str]] = {}
    """Per complete run, the candidates of quarantined commits that ``taskfactory repair``
    has yet to run again."""

    def listed(self, table: str) -> list[ShardEntry]:
        return [s for s in self.shards if s.table == table]

    def next_commit(self) -> int:
        return max((c.number for c in self.commits), default=0) + 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def load_manifest(data_dir: Path) -> Manifest:
    """The manifest of ``data_dir`` (empty when there is none).

    Raises DatasetError for an unreadable manifest or one of a newer schema version."""
    path = data_dir / MANIFEST
    if not path.exists():
        return Manifest()
    try:
        raw = json.loads(path.read_text())
        if not isinstance(raw, dict):
            raise ValueError(f"a JSON {type(raw).__name__}, not an object")
        version = int(raw.get("schema_version", 1))
        if raw.get("format", 1) == 1:  # schema version 1: no bytes, one version for all
            raw = {"format": FORMAT, "schema_version": version, "runs": {},
                   "shards": [{**s, "schema_version": version} for s in raw["shards"]]}
        manifest = Manifest.model_validate(raw)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = str(exc).splitlines()[0]
        raise UnreadableManifest(f"{path} is not a readable manifest ({reason}); rebuild it from "
                           f"the shards with `{REPAIR_HINT.format(data=data_dir)}`") from None
    newest = max([manifest.schema_version, *(s.schema_version for s in manifest.shards)])
    if newest > SCHEMA_VERSION:
        raise DatasetError(f"{data_dir} holds schema version {newest}; this taskfactory reads "
                           f"versions 1 to {SCHEMA_VERSION}; upgrade taskfactory")
    return manifest


def save_manifest(data_dir: Path, manifest: Manifest) -> None:
    manifest.format = FORMAT
    manifest.schema_version = max([SCHEMA_VERSION, *(s.schema_version for s in manifest.shards)])
    atomic_write(data_dir / MANIFEST, manifest.model_dump_json(indent=1).encode())
