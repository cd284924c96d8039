"""The Dataset object: its read API and the context a run writes through, on real shards
(no Prefect flow: outcomes are recorded directly, as the factory records them)."""

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from schemas.records import AttemptRow, TaskRow, TrajectoryRow
from tasks.dataset import Dataset, DatasetError, QueryError
from tasks.dataset.dedup import DedupIndex
from tasks.dataset.provenance import RunIdentity

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"
SETTINGS = {"seed": 5, "shard_rows": 2, "tasks": 3}


@dataclass
class Done:
    """A candidate's outcome, as the pipeline hands it over."""

    attempt: AttemptRow
    task: TaskRow | None = None
    trajectories: list[TrajectoryRow] = field(default_factory=list)


def outcome(i: int, status: str = "rejected", run_id: str = "r1") -> Done:
    return Done(AttemptRow(
        candidate_id=f"c{i}", run_id=run_id, index=i, ecosystem="files", seed=i,
        shape="chain", depth=1, fingerprint=f"f{i}", status=status,
        stage="execute", reason="engine" if status == "errored" else "binding", detail="",
        task_id=None, backend="local", repairs=[], sandboxes=1, sandbox_s=0.1,
        execute_s=0.1, gate_s=0.0, render_s=0.0, total_s=0.2, created_at=datetime.now(UTC)))


def identity(run_id: str = "r1", flow_run: str = "flow-1") -> RunIdentity:
    return RunIdentity(run_id=run_id, flow_run_id=flow_run, config_hash="cfg")


def run(dataset: Dataset, outcomes: list[Done], ident: RunIdentity | None = None,
        repair: bool = False, warn=None):
    """One run through Dataset.run: held candidates skipped, the rest recorded, finished."""
    dataset.warn = warn or dataset.warn
    with dataset.run(ident or identity(), SETTINGS, {"files": None}, DedupIndex(),
                     repair=repair) as writer:
        todo = [o for o in outcomes if o.attempt.candidate_id not in writer.held]
        writer.begin()
        for o in todo:
            writer.record(o)
        return writer.finish(candidates=len(outcomes)), len(todo)


def test_a_finished_run_is_complete_with_one_runs_row_and_a_repair_keeps_it(tmp_path):
    dataset = Dataset(tmp_path)
    tally, ran = run(dataset, [outcome(i) for i in range(3)])
    assert (tally.attempts, tally.accepted, ran) == (3, 0, 3)
    entry = dataset.manifest().runs["r1"]
    assert (entry.status, entry.resumes, entry.flow_run_ids) == ("complete", 0, ["flow-1"])
    _, rows = dataset.query("select candidates, skipped, rejected, resumes from runs")
    assert rows == [(3, 0, 3, 0)]
    shards = len(dataset.manifest().shards)

    # a repair of the complete run: nothing lost here, so nothing runs; it ends complete
    # on disk with the runs row it had (not a second one) and is not counted as a resume
    tally, ran = run(dataset, [outcome(i) for i in range(3)],
                     identity(flow_run="flow-2"), repair=True)
    assert (tally.attempts, ran) == (3, 0)
    entry = dataset.manifest().runs["r1"]
    assert (entry.status, entry.resumes, entry.flow_run_ids) == ("complete", 0,
                                                                  ["flow-1", "flow-2"])
    assert dataset.query("select count(*) from runs")[1] == [(1,)]
    assert len(dataset.manifest().shards) == shards


def test_errored_candidates_leave_the_run_unfinished_until_a_resume_settles_them(tmp_path):
    dataset, warnings = Dataset(tmp_path), []
    tally, _ = run(dataset, [outcome(0), outcome(1, "errored")], warn=warnings.append)
    assert tally.errored == 1 and dataset.manifest().runs["r1"].status == "running"
    assert dataset.query("select count(*) from runs")[1] == [(0,)]
    assert warnings == ["1 candidates errored (infrastructure); the run stays unfinished"]

    tally, ran = run(dataset, [outcome(0), outcome(1)], identity(flow_run="flow-2"))
    assert (ran, tally.errored, tally.attempts) == (1, 0, 2)  # only the errored one again
    entry = dataset.manifest().runs["r1"]
    assert (entry.status, entry.resumes) == ("complete", 1)
    assert dataset.query("select candidates, skipped, rejected, resumes from runs")[1] == [
        (2, 0, 2, 1)]


def test_a_failure_after_begin_marks_the_run_failed_and_keeps_what_was_committed(tmp_path):
    dataset = Dataset(tmp_path)
    with pytest.raises(OSError, match="No space left"), \
            dataset.run(identity(), SETTINGS, {}, DedupIndex()) as writer:
        writer.begin()
        for i in range(3):  # shard_rows 2: the first two are committed
            writer.record(outcome(i))
        raise OSError(28, "No space left on device")
    entry = dataset.manifest().runs["r1"]
    assert (entry.status, entry.reason) == ("failed", "OSError: [Errno 28] No space left on "
                                                      "device")
    assert dataset.query("select count(*) from attempts")[1] == [(2,)]


def test_a_run_that_does_not_begin_writes_nothing(tmp_path):
    dataset = Dataset(tmp_path / "data")
    with pytest.raises(KeyError), dataset.run(identity(), SETTINGS, {}, DedupIndex()):
        raise KeyError("before begin")
    with dataset.run(identity(), SETTINGS, {}, DedupIndex()) as writer:
        assert writer.held == set()
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [".lock"]


def test_the_read_api_names_the_problem_and_the_fix(tmp_path):
    with pytest.raises(DatasetError, match="no dataset at .*taskfactory run --data"):
        Dataset.open(tmp_path / "missing")
    old = Dataset.open(V1)
    with pytest.raises(DatasetError, match="lacks .*written by an older taskfactory"):
        old.task_rows()
    assert [r[0] for r in old.rows("select ecosystem from tasks limit 2")] == ["files"] * 2
    run(Dataset(tmp_path), [outcome(0)])
    new = Dataset.open(tmp_path)
    assert new.task_rows("ecosystem = 'files'") == []
    for where in ["nosuch = 1", "true; copy tasks to 'x.csv'"]:
        with pytest.raises(QueryError, match="query failed"):
            new.task_rows(where)
    assert not (tmp_path / "x.csv").exists()


def test_card_export_vacuum_and_repair_import_neither_prefect_nor_docker(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(V1, data)
    code = ("import sys; from flows.cli import main; d = sys.argv[1]; "
            "codes = [main(['card', '--data', d]), "
            "main(['export', 'sft', '--data', d, '--out', d + '.jsonl']), "
            "main(['vacuum', '--data', d, '--older-than', '7d', '--dry-run']), "
            "main(['repair', '--data', d])]; "
            "print(codes, sorted(m for m in ('prefect', 'docker') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0] []", proc.stderr
    assert (data / "README.md").exists()
    first = json.loads((tmp_path / "data.jsonl").read_text().splitlines()[0])
    assert first["messages"][0]["role"] == "system"
