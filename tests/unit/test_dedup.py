"""Dedup on real instructions (a dataset written by a real run) and the recorder that turns
duplicates into rejected attempts with provenance on every row."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from schemas.records import AttemptRow, TaskRow
from schemas.trace import Trace
from tasks.dataset.dedup import THRESHOLD, DedupIndex, shingles
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.query import run_query
from tasks.dataset.recorder import Recorder, step_rows
from tasks.pipeline import Outcome

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"
_, ROWS = run_query(V1, "select task_id, fingerprint, instruction from tasks order by task_id")


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def test_exact_structural_and_near_duplicates():
    index = DedupIndex().add_all(ROWS[:3])
    (tid, fp, text), other = ROWS[0], ROWS[4]
    assert index.check(tid, "new-fp", "new text").reason == "duplicate_task"
    dup = index.check("new-id", fp, "new text")
    assert (dup.reason, dup.of_task) == ("duplicate_structure", tid)
    reworded = text.replace("Paths are relative", "All paths are relative")
    assert jaccard(text, reworded) >= THRESHOLD
    dup = index.check("new-id", "new-fp", reworded)
    assert dup.reason == "near_duplicate_instruction" and dup.of_task == tid
    assert dup.similarity >= THRESHOLD and "instruction similarity" in dup.detail
    assert index.check(other[0], other[1], other[2]) is None


def test_distinct_real_instructions_are_not_near_duplicates():
    index = DedupIndex(structure=False)
    for tid, fp, text in ROWS:
        assert index.check(tid, fp, text) is None, "a distinct real task was flagged"
        index.add(tid, fp, text)
    assert max(jaccard(a[2], b[2]) for a in ROWS for b in ROWS if a != b) < THRESHOLD


# fields a version-1 task row lacks (instruction variants and the gate's shortcut controls)
V2_TASK = {"instruction_style": "goal", "template_id": "v1", "instruction_literals": []}
V2_GATE = {"empty_reward": 0.0, "empty_checks_passed": 0, "partial_reward": None,
           "partial_checks_passed": None, "literals_reward": 0.0, "literals_checks_passed": 0,
           "literal_trials": 0}


def _outcome(task_row: dict) -> Outcome:
    row = {**V2_TASK, **{k: v for k, v in task_row.items() if k != "provenance"}}
    task = TaskRow.model_validate({**row, "gate": {**V2_GATE, **row["gate"]}})
    attempt = AttemptRow(
        candidate_id=task.candidate_id, run_id="r2", index=0, ecosystem=task.ecosystem,
        seed=task.seed, shape=task.shape, depth=task.depth, fingerprint=task.fingerprint,
        status="accepted", stage="accepted", reason="accepted", detail="", task_id=task.task_id,
        backend="local", repairs=[], sandboxes=2, sandbox_s=0, execute_s=0, gate_s=0, render_s=0,
        total_s=0, created_at=datetime.now(UTC))
    return Outcome(attempt=attempt, task=task)


@pytest.fixture
def v1_task() -> dict:
    import duckdb

    con = duckdb.connect()
    cur = con.execute(f"select * exclude (schema_version) from '{V1}/tasks/*.parquet' limit 1")
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchone(), strict=True))


def test_recorder_stamps_every_row_and_records_duplicates_as_attempts(v1_task):
    identity = RunIdentity(run_id="r2", flow_run_id="f", config_hash="c")
    recorder = Recorder(identity, {"files": None}, DedupIndex())
    first = recorder.record(_outcome(v1_task))
    tables = [t for t, _ in first]
    n_steps = len(Trace.model_validate_json(v1_task["trace_json"]).steps)
    assert tables == ["attempts", "tasks"] + ["steps"] * n_steps
    assert all(r.provenance.run_id == "r2" and r.provenance.config_hash == "c" and
               r.provenance.seed == v1_task["seed"] for _, r in first)
    steps = step_rows(first[1][1])
    assert [s.position for s in steps] == list(range(n_steps))
    again = recorder.record(_outcome(v1_task))
    assert [t for t, _ in again] == ["attempts"]
    att = again[0][1]
    assert (att.status, att.stage, att.reason, att.task_id) == (
        "rejected", "dedup", "duplicate_task", None)
    assert v1_task["task_id"] in att.detail and att.provenance is not None
