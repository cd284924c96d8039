"""``taskfactory export atif``: trajectories (or ``solve``'s rollouts) as ATIF documents, in
Harbor's trial folders (:mod:`tasks.exports.atif.trials`) or as JSONL, one document a line.

Options are checked before anything is read or written (:class:`AtifError`, one line
naming the problem and the fix).  Rows stream from DuckDB; every document is validated
against :mod:`tasks.exports.atif.models` as it is made and written under a temporary name: hidden
job folders inside ``--out`` (or a temporary file beside it) renamed into place once every
row is written, so a failed export leaves nothing behind.  A job folder already in
``--out`` is replaced only when an export wrote it (its ``taskfactory.json``); anything
else there is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from tasks.dataset.dataset import Dataset
from tasks.dataset.provenance import generator_version
from tasks.dataset.store.paths import install_folder, writing
from tasks.exports.atif import AtifError
from tasks.exports.atif.documents import (
    ROLLOUT_COLUMNS,
    TRAJECTORY_COLUMNS,
    rollout_document,
    trajectory_document,
)
from tasks.exports.atif.models import Trajectory, dump
from tasks.exports.atif.trials import MARKER, JobSummary, job_files, job_name, trial_files

LAYOUTS = ("trials", "jsonl")
ALL = "all"
_ECOSYSTEMS = "(select task_id, any_value(ecosystem) as ecosystem from tasks group by all)"


@dataclass(frozen=True)
class AtifOptions:
    """What to export: ``rollouts`` (every model's attempts) or the trajectories of the
    chosen supervision mode and action space (``all``: every one), of the tasks matching
    ``where`` (a condition on ``tasks`` joined with ``difficulty``)."""

    layout: str = "trials"
    rollouts: bool = False
    supervision: str = ALL
    action_space: str = ALL
    where: str | None = None


def check_options(o: AtifOptions, out: Path) -> None:
    """AtifError for options that cannot work, before anything is read."""
    if o.rollouts and o.supervision not in (ALL, "masked"):
        raise AtifError(f"--rollouts: attempts are supervised masked (their calls and answer "
                        f"trained); leave --supervision {o.supervision} out")
    if o.layout == "jsonl" and out.is_dir():
        raise AtifError(f"--out {out} is a folder; --layout jsonl writes a file such as "
                        f"{out}/atif.jsonl")
    if o.layout == "trials" and os.path.lexists(out) and not out.is_dir():
        raise AtifError(f"--out {out} is not a folder; --layout trials writes job folders "
                        "into one")


def _rows(dataset: Dataset, o: AtifOptions) -> Iterator[Trajectory]:
    from tasks.exports.sft.export import task_filter

    where, params = task_filter(dataset, o.where)
    if o.rollouts:
        table, columns, make = "rollouts", ROLLOUT_COLUMNS, rollout_document
        source, order = "rollouts", "task_id, model, attempt"
        chosen = {"action_space": o.action_space}
    else:
        table, columns, make = "trajectories", TRAJECTORY_COLUMNS, trajectory_document
        source = f"trajectories join {_ECOSYSTEMS} using (task_id)"
        order = "task_id, action_space, supervision"
        chosen = {"supervision": o.supervision, "action_space": o.action_space}
    chosen = {column: value for column, value in chosen.items() if value != ALL}
    conditions = " and ".join(f"{column} = ?" for column in chosen) or "true"
    sql = (f"select {', '.join(columns)} from {source} where {conditions}{where} "
           f"order by {order}")
    for row in dataset.rows(sql, [*chosen.values(), *params]):
        record = dict(zip(columns, row, strict=True))
        try:
            yield make(record)
        except (ValidationError, ValueError) as exc:
            first = str(exc).strip().splitlines()
            raise AtifError(f"{table} row {record['trajectory_id']} makes no valid ATIF "
                            f"document ({' '.join(first[:3])}); the row is damaged or was "
                            "crafted") from None


class _Jobs:
    """Job folders written under hidden temporary names in ``out``, renamed into place one
    after another once every document is written."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.created = not os.path.lexists(out)
        self.tmp: dict[str, Path] = {}
        self.jobs: dict[str, JobSummary] = {}

    def add(self, doc: Trajectory, finished: datetime) -> None:
        job = job_name(doc)
        if job not in self.tmp:
            _check_job(self.out / job)
            with writing(self.out):
                self.out.mkdir(parents=True, exist_ok=True)
                self.tmp[job] = Path(tempfile.mkdtemp(dir=self.out, prefix=f".{job}.tmp-"))
        self.jobs.setdefault(job, JobSummary()).add(doc, finished)
        with writing(self.out):
            for rel, data in trial_files(doc, self.out, finished).items():
                path = self.tmp[job] / rel.partition("/")[2]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)

    def commit(self) -> None:
        with writing(self.out):
            for job, tmp in self.tmp.items():
                for name, data in job_files(job, self.jobs[job], generator_version()).items():
                    (tmp / name).write_bytes(data)
                tmp.chmod(0o755)
            for job, tmp in self.tmp.items():
                install_folder(tmp, self.out / job)
        self.tmp.clear()

    def discard(self) -> None:
        for tmp in self.tmp.values():
            shutil.rmtree(tmp, ignore_errors=True)
        if self.created and self.out.is_dir() and not any(self.out.iterdir()):
            self.out.rmdir()


def _check_job(folder: Path) -> None:
    if not os.path.lexists(folder):
        return
    try:
        ours = stat.S_ISDIR(os.lstat(folder).st_mode) and \
            stat.S_ISREG(os.lstat(folder / MARKER).st_mode)
    except OSError:
        ours = False
    if not ours:
        raise AtifError(f"{folder} exists and was not written by `taskfactory export atif` "
                        f"(no {MARKER} in it); move it away or choose another --out")


def _nothing(data: Path, o: AtifOptions) -> AtifError:
    what = ("rollouts" if o.rollouts else
            f"trajectories (supervision {o.supervision}, action space {o.action_space})")
    table = "rollouts" if o.rollouts else "trajectories"
    return AtifError(f"no {what} in {data}" + (f" matching --where {o.where}" if o.where
                                                  else "")
                     + f"; check `taskfactory query \"select action_space, count(*) from "
                       f"{table} group by all\"`")


def export_atif(data: Path, out: Path, options: AtifOptions) -> Counter[str]:
    """Write the export; returns the documents written per job (``jsonl``: under the file's
    name).  AtifError (or DatasetError) before anything is written when the input is bad,
    and no partial file or folder is left behind."""
    check_options(options, out)
    dataset = Dataset.open(data)
    docs = _rows(dataset, options)
    counts = _write_jsonl(docs, out) if options.layout == "jsonl" else _write_trials(docs, out)
    if not counts:
        raise _nothing(data, options)
    return counts


def _write_trials(docs: Iterator[Trajectory], out: Path) -> Counter[str]:
    jobs = _Jobs(out)
    try:
        for doc in docs:
            jobs.add(doc, _finished(doc))
        jobs.commit()
    finally:
        jobs.discard()
    return Counter({job: summary.trials for job, summary in jobs.jobs.items()})


def _finished(doc: Trajectory) -> datetime:
    return datetime.fromisoformat((doc.extra or {})["created_at"])


def _write_jsonl(docs: Iterator[Trajectory], out: Path) -> Counter[str]:
    from tasks.exports.sft import ExportError
    from tasks.exports.sft.export import _Staged

    staged = _Staged()
    counts: Counter[str] = Counter()
    try:
        try:
            handle = staged.open(out)
        except ExportError as exc:  # no folder for --out
            raise AtifError(str(exc)) from None
        with handle as f:
            for doc in docs:
                f.write(json.dumps(dump(doc), ensure_ascii=False) + "\n")
                counts[out.name] += 1
            f.flush()
            os.fsync(f.fileno())
        if counts:
            staged.commit()
    finally:
        staged.discard()
    return counts
