"""What the Prefect UI shows for a run, read back through the Prefect API.

A real CLI run against the session's Prefect server mixes accepted and rejected
candidates (the ``faults`` fixture ecosystem, repair off).  The flow run is named after
the run id and seed; each candidate's task run after its ecosystem and candidate, ends in
a state named after its outcome and carries ecosystem and outcome tags; each rejected
candidate logs one line with its stage, reason and detail; the run summary starts with
the dataset's host and absolute path, and a link artifact points at it.
"""

import json
import os
import socket
import subprocess
import sys

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterId,
    LogFilter,
    LogFilterFlowRunId,
)

from tasks.dataset.query import run_query

FAULTS = "tests/fixtures/ecosystems/faults"


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, prefect_api_url):
    data = tmp_path_factory.mktemp("ui") / "data"
    proc = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", "--tasks", "6", "--seed", "1", "--backend",
         "local", "--ecosystem", f"files,{FAULTS}", "--no-repair", "--data", str(data)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PREFECT_API_URL": prefect_api_url})
    assert proc.returncode == 0, proc.stderr
    (run_id, flow_run_id), = run_query(data, "select run_id, flow_run_id from runs")[1]
    _, attempts = run_query(data, "select ecosystem, index, candidate_id, status, stage, reason, "
                                  "detail from attempts order by index")
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        only = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id]))
        task_runs = {t.name: t for t in client.read_task_runs(flow_run_filter=only)}
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run.id])))
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id])))
    return data, run_id, flow_run, attempts, task_runs, logs, artifacts


def test_the_flow_run_is_named_after_the_run_and_its_seed(mixed_run):
    _, run_id, flow_run, *_ = mixed_run
    assert flow_run.name == f"{run_id} seed 1"


def test_a_rejected_candidate_has_its_own_state_tags_and_one_log_line(mixed_run):
    _, _, _, attempts, task_runs, logs, _ = mixed_run
    statuses = {a[3] for a in attempts}
    assert statuses == {"accepted", "rejected"}  # both kinds, to tell apart
    assert len(task_runs) == len(attempts)
    for eco, index, cid, status, stage, reason, detail in attempts:
        run = task_runs[f"{eco} #{index} {cid}"]
        assert run.state.type.value == "COMPLETED"  # the result and its cache stay intact
        assert run.state.name == status.capitalize()
        assert {f"ecosystem:{eco}", f"outcome:{status}"} <= set(run.tags)
        lines = [log.message for log in logs if log.task_run_id == run.id
                 and log.level >= 30]
        if status == "rejected":
            (line,) = lines
            assert line.startswith(f"rejected: stage {stage}, reason {reason}: ")
            assert detail in line
        else:
            assert lines == []


def test_the_summary_starts_with_host_and_absolute_path_and_links_the_dataset(mixed_run):
    data, run_id, _, _, _, _, artifacts = mixed_run
    by_key = {a.key: a for a in artifacts}
    table = by_key["taskfactory-run-summary"].data
    rows = json.loads(table) if isinstance(table, str) else table
    host = socket.gethostname()
    assert rows[:2] == [{"metric": "data", "value": str(data)},
                        {"metric": "host", "value": host}]
    link = by_key["taskfactory-dataset"]  # Prefect stores a link artifact as markdown
    assert link.data == f"[{host}:{data}](file://{host}{data})"
    assert run_id in link.description
