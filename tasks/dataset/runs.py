"""Run bookkeeping: which run to resume, what the dataset already holds, the ``runs`` row.

Semantics (also in docs/usage.md, "Resuming and rerunning"):

- A run is recorded in the manifest as ``running`` when it starts work and ``complete``
  in the same manifest update that commits its ``runs`` row, so a killed run stays
  ``running``; a flow that raises marks it ``failed`` with the reason
  (:func:`tasks.dataset.run_writer.writing_run`).
- ``--resume [RUN_ID]`` continues a running or failed run (the newest by default) with its
  recorded settings and **its run id**: continued rows carry the original ``run_id`` and
  a new ``provenance.flow_run_id``; the ``runs`` row counts the resumes.
- Any run — new or resumed — skips every candidate whose attempt is already committed
  under the same config hash (by any run).  What a kill lost (the writer's uncommitted
  buffer, orphan shards) is exactly what is not committed, so it is run again; its
  Prefect results are cached per run, so candidates that had finished are not executed
  twice.
- A run with nothing left to do writes nothing (not even a ``runs`` row): a repeated run
  adds zero rows.
- ``taskfactory repair`` re-runs the candidates of a complete run that it quarantined:
  not counted as a resume, and the run keeps the ``runs`` row it has (one is written
  only if that row was quarantined too).
- An ``errored`` attempt (the infrastructure failed under the candidate) holds nothing:
  the next run of the same config — a resume or a same-seed rerun — runs the candidate
  again, and its new attempt supersedes the errored one (:data:`SETTLED_ATTEMPTS`).  A run
  that ends with errored candidates stays unfinished (no ``runs`` row) until a resume
  settles them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
from pydantic import BaseModel

from tasks.dataset.store.manifest import DatasetError, Manifest, RunEntry

SETTLED_ATTEMPTS = """(select * from attempts qualify status <> 'errored' or created_at =
    max(created_at) over (partition by candidate_id, provenance.config_hash))"""
"""The attempts that stand: every attempt except an ``errored`` one that a later attempt of
the same candidate under the same config superseded.  One row per candidate and config."""


def resumable(manifest: Manifest, data: str, run_id: str | None = None) -> str:
    """The id of the run to resume: ``run_id`` (which must be unfinished) or the newest
    unfinished run.  DatasetError names the problem and the fix."""
    if run_id is not None:
        entry = manifest.runs.get(run_id)
        if entry is None:
            raise DatasetError(f"--resume {run_id}: no such run in {data}; "
                               f"`taskfactory query \"select run_id from runs\"` lists them")
        if entry.status == "complete":
            raise DatasetError(f"--resume {run_id}: that run in {data} is complete; "
                               "start a new run without --resume")
        return run_id
    open_runs = sorted((e.started_at, rid) for rid, e in manifest.runs.items()
                       if e.status != "complete")
    if not open_runs:
        raise DatasetError(f"--resume: no interrupted run in {data}; start one without "
                           "--resume")
    return open_runs[-1][1]


def begin(manifest: Manifest, run_id: str, settings: dict, config_hash: str,
          flow_run_id: str | None, repair: bool = False) -> RunEntry:
    """The manifest entry of ``run_id``, created or (on resume, not on ``repair``) counted
    as resumed."""
    entry = manifest.runs.get(run_id)
    if entry is None:
        entry = RunEntry(config_hash=config_hash, settings=settings,
                         started_at=datetime.now(UTC).isoformat())
        manifest.runs[run_id] = entry
    else:
        if entry.config_hash != config_hash:
            raise DatasetError(f"run {run_id} was recorded with config hash "
                               f"{entry.config_hash}, now {config_hash} (the code, an "
                               "ecosystem or an image changed); start a new run instead")
        entry.resumes += not repair
        entry.status, entry.reason = "running", None
    if flow_run_id:
        entry.flow_run_ids.append(flow_run_id)
    return entry


def unless_recorded(con: duckdb.DuckDBPyConnection, run_id: str, group: list) -> list:
    """``group`` (the run's ``runs`` row), or nothing when the dataset already has a
    ``runs`` row of ``run_id``: a repair re-runs candidates of a complete run, whose row
    stays the one it has."""
    (n,) = (con.execute("select count(*) from runs where run_id = ?", [run_id]).fetchone()
            or (0,))
    return [] if n else group


def held_candidates(con: duckdb.DuckDBPyConnection, config_hash: str) -> set[str]:
    """Candidates with a committed attempt under ``config_hash`` (from any run), except
    those whose attempt errored: they run again."""
    rows = con.execute(f"select distinct candidate_id from {SETTLED_ATTEMPTS} "
                       "where provenance.config_hash = ? and status <> 'errored'",
                       [config_hash]).fetchall()
    return {r[0] for r in rows}


def indexed_tasks(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(task_id, fingerprint, instruction) of every task, in commit order."""
    return con.execute("select task_id, fingerprint, instruction from tasks").fetchall()


class EcosystemYield(BaseModel):
    candidates: int = 0
    accepted: int = 0
    accepted_without_repair: int = 0
    """Accepted with no repair applied: the yield the same candidates have with repair off."""
    rejected: dict[str, int] = {}
    """``stage/reason`` -> count."""
    errored: int = 0
    """Stopped by the infrastructure, not yet run again: neither accepted nor rejected."""


class RunTally(BaseModel):
    """A run's committed attempts (over all its resumes), errored ones superseded by a
    later attempt left out."""

    attempts: int = 0
    accepted: int = 0
    errored: int = 0
    duplicates: int = 0
    ecosystems: dict[str, EcosystemYield] = {}


def tally(con: duckdb.DuckDBPyConnection, run_id: str) -> RunTally:
    """What ``run_id`` has committed so far, per ecosystem."""
    out = RunTally()
    for eco, status, stage, reason, bare, n in con.execute(
            "select ecosystem, status, stage, reason, len(repairs) = 0, count(*) from "
            f"{SETTLED_ATTEMPTS} where run_id = ? group by all order by all", [run_id]
            ).fetchall():
        y = out.ecosystems.setdefault(eco, EcosystemYield())
        y.candidates += n
        out.attempts += n
        if status == "accepted":
            y.accepted += n
            out.accepted += n
            y.accepted_without_repair += n if bare else 0
        elif status == "errored":
            y.errored += n
            out.errored += n
        else:
            key = f"{stage}/{reason}"
            y.rejected[key] = y.rejected.get(key, 0) + n
            out.duplicates += n if stage == "dedup" else 0
    return out
