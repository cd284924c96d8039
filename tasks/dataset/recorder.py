"""From a candidate's outcome to the rows that are written: dedup, provenance, steps.

The factory calls :meth:`Recorder.record` once per candidate, in candidate order.  A task
that duplicates what the dataset holds becomes a rejected attempt (stage ``dedup``, the
reason and the task it duplicates in ``detail``) and none of its rows are written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from schemas.records import AttemptRow, StepRow, TableRow, TaskRow, TrajectoryRow
from schemas.trace import Trace
from tasks.dataset.dedup import DedupIndex
from tasks.dataset.provenance import RunIdentity

OUTPUT_CAP = 4000
"""Characters of stdout / stderr kept per step in ``steps`` (the tail)."""


def _tail(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= OUTPUT_CAP else (text[-OUTPUT_CAP:], True)


def step_rows(task: TaskRow) -> list[StepRow]:
    """One row per executed step of ``task``'s reference trace (provenance left unset)."""
    rows = []
    for position, st in enumerate(Trace.model_validate_json(task.trace_json).steps):
        stdout, cut_out = _tail(st.observation.stdout)
        stderr, cut_err = _tail(st.observation.stderr)
        rows.append(StepRow(
            task_id=task.task_id, run_id=task.run_id, position=position, step_id=st.step_id,
            tool=st.tool, args_json=json.dumps(st.args, sort_keys=True), command=st.command,
            exit_code=st.observation.exit_code, stdout=stdout, stderr=stderr,
            truncated=st.observation.truncated or cut_out or cut_err,
            duration_s=st.observation.duration_s, output_type=st.output_type))
    return rows


class Outcome(Protocol):
    """What a candidate ended with: its attempt and, when accepted, its task and
    trajectories (the pipeline's outcome has these fields)."""

    @property
    def attempt(self) -> AttemptRow: ...
    @property
    def task(self) -> TaskRow | None: ...
    @property
    def trajectories(self) -> Sequence[TrajectoryRow]: ...


class Recorder:
    """Applies dedup and provenance to outcomes."""

    def __init__(self, identity: RunIdentity, images: Mapping[str, str | None],
                 index: DedupIndex) -> None:
        self.identity = identity
        self.images = images
        self.index = index

    def record(self, outcome: Outcome) -> list[tuple[str, TableRow]]:
        """The (table, row) group to write for ``outcome``, deduplicated and stamped."""
        attempt, task = outcome.attempt, outcome.task
        if task is not None:
            dup = self.index.check(task.task_id, task.fingerprint, task.instruction)
            if dup is None:
                self.index.add(task.task_id, task.fingerprint, task.instruction)
            else:
                attempt = attempt.model_copy(update={
                    "status": "rejected", "stage": "dedup", "reason": dup.reason,
                    "detail": f"task {task.task_id} has {dup.detail}", "task_id": None})
                task = None
        prov = self.identity.provenance(seed=attempt.seed,
                                        image_id=self.images.get(attempt.ecosystem),
                                        created_at=attempt.created_at)
        rows: list[tuple[str, TableRow]] = [("attempts", attempt)]
        if task is not None:
            rows.append(("tasks", task))
            rows += [("steps", s) for s in step_rows(task)]
            rows += [("trajectories", t) for t in outcome.trajectories]
        return [(table, row.model_copy(update={"provenance": prov})) for table, row in rows]
