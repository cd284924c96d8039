"""The dataset manifest: the commit log of a dataset folder.

``<data>/_manifest.json`` lists every committed shard (table, path, rows, bytes, sha256,
run id, schema version, commit number), every commit (its number, run and candidate ids)
and every run's state (``running`` until its last shard and its ``runs`` row are
committed, then ``complete``; ``failed``, with the reason, when the flow raised).
Protocol:

1. a commit's shards are written to hidden temp names, fsynced and renamed into place;
   each carries its commit record (:mod:`tasks.dataset.store.commits`), so the log can be rebuilt;
2. the manifest is rewritten atomically (temp, fsync, rename, fsync the folder) *after*
   the shards it adds, so a shard is committed exactly when the manifest lists it;
3. readers trust only listed shards whose sha256 matches (:mod:`tasks.dataset.store.checksums`).

**The manifest is never a reason to delete.**  A writer never removes a file: shard files
the manifest does not list are never read, and those of the one commit a killed writer
can leave are recorded as ``abandoned`` by the next writer (``taskfactory vacuum`` is the
only command that deletes).  A folder whose unlisted shards are more than that one commit
(no manifest, or an older one) or whose listed shards are corrupt is refused by every
writer, naming ``taskfactory repair`` (:mod:`tasks.dataset.store.lock` makes those checks and
holds the one-writer lock).

**What is read as a manifest.**  Formats 1 to :data:`FORMAT`, parsed with bounded nesting
and UTF-8 only; a newer format or schema version is refused and never rewritten.  An
unknown field, a field of the wrong type or size, a shard path that is not
``<table>/<file>`` of a known table or a run id that is not a plain name
(:mod:`tasks.dataset.store.paths`) make it :class:`UnreadableManifest`: ``taskfactory repair``
quarantines it and rebuilds it from the shards.  Each save writes the marker
``_taskfactory`` beside it if it is missing (:mod:`tasks.dataset.store.folder`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import from_json

from schemas.records import SCHEMA_VERSION, TABLES
from tasks.dataset.store.errors import DatasetError, UnreadableManifest, first_line, one_line
from tasks.dataset.store.paths import atomic_write, check_name, check_relative, create, open_file

__all__ = ["DatasetError", "Manifest", "UnreadableManifest", "atomic_write", "load_manifest",
           "save_manifest"]

MANIFEST = "_manifest.json"
MARKER = "_taskfactory"
"""The file that makes a folder a dataset (:mod:`tasks.dataset.store.folder`)."""
MARKER_TEXT = (b"taskfactory dataset (see _manifest.json); taskfactory commands refuse a "
               b"non-empty --data folder without this file\n")
FORMAT = 3
"""1: schema version 1.  2: + bytes and schema version per shard, runs.  3: + commits
(shard ``commit`` numbers, candidate ids per commit), ``abandoned``, ``pending``."""
REPAIR_HINT = "taskfactory repair --data {data}"
MAX_MANIFEST_BYTES = 1 << 30

Name = Annotated[str, AfterValidator(check_name)]
"""A run id: it becomes part of shard file names."""
Count = Annotated[int, Field(ge=0, lt=1 << 63)]
Number = Annotated[int, Field(ge=1, lt=1 << 63)]


def _table_path(path: str) -> str:
    """A path the manifest may list: ``<table>/<name>`` (a shard or a temp file)."""
    check_relative(path)
    table, _, name = path.partition("/")
    if table not in TABLES or "/" in name:
        raise ValueError(f"path {path!r} is not <table>/<file> of a known table")
    return path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShardEntry(_Strict):
    table: str
    path: Annotated[str, AfterValidator(_table_path)]
    """Relative to the dataset folder: ``<table>/<file>``."""
    rows: Count
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    run_id: Name
    bytes: Count | None = None
    """None only in manifests written by schema version 1."""
    schema_version: Number = 1
    commit: Number | None = None
    """The number of the commit that listed it; None in manifests before format 3."""

    @model_validator(mode="after")
    def _in_its_table(self) -> ShardEntry:
        if self.path.partition("/")[0] != self.table:
            raise ValueError(f"shard {self.path!r} is not in the folder of table {self.table}")
        return self


class CommitEntry(_Strict):
    number: Number
    run_id: Name
    candidates: list[str]
    """The candidates whose rows the commit holds (none for a ``runs`` row)."""


class RunEntry(_Strict):
    config_hash: str
    settings: dict
    started_at: str
    status: Literal["running", "complete", "failed"] = "running"
    """``running`` also after a kill; ``failed`` when the flow raised.  Both can be resumed."""
    reason: str | None = None
    """Why a ``failed`` run stopped: the exception's type and message."""
    resumes: Count = 0
    flow_run_ids: list[str] = []


class Manifest(_Strict):
    format: int = FORMAT
    schema_version: Number = SCHEMA_VERSION
    shards: list[ShardEntry] = []
    commits: list[CommitEntry] = []
    runs: dict[Name, RunEntry] = {}
    abandoned: list[Annotated[str, AfterValidator(_table_path)]] = []
    """Unlisted shard and temp files of killed writers (relative paths): never read, kept
    until ``taskfactory vacuum`` removes them."""
    pending: dict[Name, list[str]] = {}
    """Per complete run, the candidates of quarantined commits that ``taskfactory repair``
    has yet to run again."""

    def listed(self, table: str) -> list[ShardEntry]:
        return [s for s in self.shards if s.table == table]

    def next_commit(self) -> int:
        return max((c.number for c in self.commits), default=0) + 1

    def once(self) -> list[ShardEntry]:
        """The shards, each path's first entry only (a path listed twice is read once)."""
        first: dict[str, ShardEntry] = {}
        for entry in self.shards:
            first.setdefault(entry.path, entry)
        return list(first.values())

    def duplicates(self) -> list[str]:
        """Paths listed more than once (each would be read as often as it is listed)."""
        seen: set[str] = set()
        twice = []
        for s in self.shards:
            if s.path in seen:
                twice.append(s.path)
            seen.add(s.path)
        return twice


def _parse(blob: bytes) -> Manifest:
    """The manifest in ``blob``; ValueError (or a subclass) naming what is wrong."""
    if len(blob) > MAX_MANIFEST_BYTES:
        raise ValueError(f"{len(blob)} bytes, more than {MAX_MANIFEST_BYTES}")
    raw = from_json(blob)  # bounded nesting, UTF-8 only, no lone surrogates
    if not isinstance(raw, dict):
        raise ValueError(f"a JSON {type(raw).__name__}, not an object")
    fmt = raw.get("format", 1)
    if type(fmt) is not int or fmt < 1:
        raise ValueError(f"format {fmt!r} is not a format number")
    if fmt > FORMAT:
        raise NewerManifest(fmt)
    if fmt == 1:  # schema version 1: no bytes, one version for all
        version, shards = raw.get("schema_version", 1), raw["shards"]
        if not isinstance(shards, list) or not all(isinstance(s, dict) for s in shards):
            raise ValueError("shards is not a list of objects")
        raw = {"format": FORMAT, "schema_version": version, "runs": {},
               "shards": [{**s, "schema_version": version} for s in shards]}
    return Manifest.model_validate(raw)


class NewerManifest(Exception):
    """A manifest format newer than :data:`FORMAT`."""


def _reason(exc: Exception) -> str:
    """What is wrong, in a few words on one line."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        text = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    elif isinstance(exc, KeyError):
        text = f"no {exc.args[0]!r}"
    else:
        return first_line(exc)
    return one_line(text)[:200]


def load_manifest(data_dir: Path) -> Manifest:
    """The manifest of ``data_dir`` (empty when there is none).

    Raises UnreadableManifest for a manifest that is not one (not a regular file, not
    JSON, a field of the wrong type or size, a path that leaves its table folder), and
    DatasetError for one of a newer format or schema version: never rewritten here."""
    path = data_dir / MANIFEST
    try:
        with open_file(data_dir, MANIFEST) as f:
            manifest = _parse(f.read(MAX_MANIFEST_BYTES + 1))
    except FileNotFoundError:
        return Manifest()
    except NewerManifest as exc:
        raise DatasetError(f"{path} has manifest format {exc.args[0]}; this taskfactory reads "
                           f"formats 1 to {FORMAT}; upgrade taskfactory") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        reason = _reason(exc)
        raise UnreadableManifest(f"{path} is not a readable manifest ({reason}); rebuild it "
                                 f"from the shards with `{REPAIR_HINT.format(data=data_dir)}`",
                                 reason) from None
    newest = max([manifest.schema_version, *(s.schema_version for s in manifest.shards)])
    if newest > SCHEMA_VERSION:
        raise DatasetError(f"{data_dir} holds schema version {newest}; this taskfactory reads "
                           f"versions 1 to {SCHEMA_VERSION}; upgrade taskfactory")
    return manifest


def save_manifest(data_dir: Path, manifest: Manifest) -> None:
    """Write the manifest atomically, and the marker beside it if it is not there (the
    caller holds the writer lock)."""
    manifest.format = FORMAT
    manifest.schema_version = max([SCHEMA_VERSION, *(s.schema_version for s in manifest.shards)])
    if not os.path.lexists(data_dir / MARKER):
        create(data_dir / MARKER, MARKER_TEXT, exclusive=True)
    atomic_write(data_dir / MANIFEST, manifest.model_dump_json(indent=1).encode())
