"""ATIF documents laid out the way Harbor lays out a job's trials, so ``harbor view`` and
Harbor's analyzers read an export as they read a job::

    OUT/<job>/                         one job per source, action space (and mode)
      config.json, result.json         Harbor JobConfig (the job name, its agents) and
                                       JobResult (trial count, first and last times)
      taskfactory.json                 what wrote the folder (an export replaces only these)
      <ecosystem>-<task_id>__<trajectory_id>/
        config.json                    Harbor TrialConfig: the task (the folder name
                                       ``export harbor`` gives it) and the agent
        result.json                    Harbor TrialResult: agent, token totals, reward, times
        agent/trajectory.json          the ATIF document
        verifier/reward.txt, reward.json   the reward (and, for a rollout, the checks)
        verifier/test-stdout.txt       a rollout's verifier lines, as Harbor would keep them

Job names: ``trajectories-<action space>-<supervision>`` and ``rollouts-<action space>``.
Ids in the files are derived from the trajectory ids, so the same export writes the same
bytes (``trial_uri`` aside, which names where the trial folder is).  Pure functions.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tasks.dataset.store.paths import check_name
from tasks.exports.atif import AtifError
from tasks.exports.atif.models import Trajectory, dump

MARKER = "taskfactory.json"
_NAMESPACE = uuid.UUID("5f0c6b8e-3d0a-4c1e-9a57-1b2f3e4d5c6a")


def job_name(doc: Trajectory) -> str:
    extra = doc.extra or {}
    if extra["source"] == "trajectories":
        return f"trajectories-{extra['action_space']}-{extra['supervision']}"
    return f"rollouts-{extra['action_space']}"


def task_folder(doc: Trajectory) -> str:
    """``<ecosystem>-<task_id>``: the task's folder name in ``export harbor``."""
    extra = doc.extra or {}
    return f"{extra['ecosystem']}-{extra['task_id']}"


def trial_name(doc: Trajectory) -> str:
    """The trial folder's name; AtifError unless it is a plain name (a crafted row must not
    name a folder outside the job)."""
    name = f"{task_folder(doc)}__{(doc.extra or {})['trajectory_id']}"
    try:
        return check_name(name, "trial folder name")
    except ValueError as exc:
        raise AtifError(f"{exc}; the dataset's rows are damaged or were crafted") from None


def _json(data: object) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


def _model(doc: Trajectory) -> dict[str, Any] | None:
    return {"name": doc.agent.model_name} if doc.agent.model_name else None


def _trial_config(doc: Trajectory, job: str) -> dict[str, Any]:
    return {"task": {"path": task_folder(doc)}, "trial_name": trial_name(doc),
            "agent": {"name": doc.agent.name, "model_name": doc.agent.model_name},
            "job_id": str(uuid.uuid5(_NAMESPACE, job))}


def _result(doc: Trajectory, job: str, trial_dir: Path, finished: datetime) -> dict[str, Any]:
    extra, totals = doc.extra or {}, doc.final_metrics
    started = finished - timedelta(seconds=float(extra.get("total_s") or 0))
    agent_result = {"n_input_tokens": totals.total_prompt_tokens if totals else None,
                    "n_output_tokens": totals.total_completion_tokens if totals else None,
                    "metadata": {k: extra[k] for k in ("stop_reason", "detail") if k in extra}}
    return {
        "id": str(uuid.uuid5(_NAMESPACE, extra["trajectory_id"])),
        "task_name": task_folder(doc), "trial_name": trial_name(doc),
        "trial_uri": trial_dir.absolute().as_uri(), "task_id": {"path": task_folder(doc)},
        "task_checksum": "", "config": _trial_config(doc, job),
        "agent_info": {"name": doc.agent.name, "version": doc.agent.version,
                       "model_info": _model(doc)},
        "agent_result": agent_result,
        "verifier_result": {"rewards": {"reward": extra["reward"]}},
        "started_at": started.isoformat(), "finished_at": finished.isoformat()}


def _verifier(extra: dict[str, Any]) -> dict[str, bytes]:
    summary = {"reward": extra["reward"]}
    if extra["source"] == "rollouts":
        summary |= {"checks_passed": extra["checks_passed"],
                    "checks_total": extra["checks_total"]}
    files = {"verifier/reward.txt": f"{extra['reward']:g}\n".encode(),
             "verifier/reward.json": (json.dumps(summary) + "\n").encode()}
    if extra.get("verifier_lines") is not None:
        lines = [*extra["verifier_lines"], json.dumps(summary)]
        files["verifier/test-stdout.txt"] = ("\n".join(lines) + "\n").encode()
    return files


def trial_files(doc: Trajectory, out: Path, finished: datetime) -> dict[str, bytes]:
    """Every file of the document's trial folder, by path relative to ``out`` (the export's
    folder); ``finished``: when the attempt or the trajectory was made."""
    job = job_name(doc)
    trial = trial_name(doc)
    files = {"agent/trajectory.json": _json(dump(doc)),
             "config.json": _json(_trial_config(doc, job)),
             "result.json": _json(_result(doc, job, out / job / trial, finished)),
             **_verifier(doc.extra or {})}
    return {f"{job}/{trial}/{rel}": data for rel, data in files.items()}


@dataclass
class JobSummary:
    """What a job folder's own files say of its trials."""

    agents: set[tuple[str, str | None]] = field(default_factory=set)
    trials: int = 0
    first: datetime | None = None
    last: datetime | None = None

    def add(self, doc: Trajectory, finished: datetime) -> None:
        self.agents.add((doc.agent.name, doc.agent.model_name))
        self.trials += 1
        self.first = min(self.first or finished, finished)
        self.last = max(self.last or finished, finished)


def job_files(job: str, summary: JobSummary, written_by: str) -> dict[str, bytes]:
    """A job folder's own files: Harbor's ``config.json`` and ``result.json``, and the
    export's marker."""
    agents = sorted(summary.agents, key=lambda a: (a[0], a[1] or ""))
    config = {"job_name": job, "n_attempts": 1,
              "agents": [{"name": name, "model_name": model} for name, model in agents]}
    result = {"id": str(uuid.uuid5(_NAMESPACE, job)),
              "started_at": summary.first.isoformat() if summary.first else None,
              "finished_at": summary.last.isoformat() if summary.last else None,
              "n_total_trials": summary.trials,
              "stats": {"n_completed_trials": summary.trials, "n_errored_trials": 0}}
    return {"config.json": _json(config), "result.json": _json(result),
            MARKER: _json({"written_by": written_by, "job": job, "trials": summary.trials})}
