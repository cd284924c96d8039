"""A run that fails is left ``failed`` in the manifest with its reason, and can be resumed.

The failure is injected (the recorder raises on the fourth outcome, as a full disk or a
lost API would); everything else is real: the flow on the session's Prefect server, the
local backend, the shards, and the CLI's ``--resume`` in a subprocess.
"""

import pytest

from flows import factory as factory_module
from flows.settings import RunSettings
from tasks.dataset.query import run_query
from tasks.dataset.recorder import Recorder
from tasks.dataset.store.manifest import load_manifest

OUTCOME = "select candidate_id, status, stage, reason, task_id from attempts order by all"


def test_a_failing_run_is_left_failed_with_its_reason_and_resume_finishes_it(
        prefect_api_url, cli, tmp_path, monkeypatch):
    data = tmp_path / "data"
    settings = RunSettings(tasks=6, seed=3, data=data, backend="local", ecosystems=["files"],
                           workers=2, shard_rows=1)
    record, seen = Recorder.record, []

    def flaky(self, outcome):
        seen.append(outcome)
        if len(seen) == 4:
            raise OSError(28, "No space left on device")
        return record(self, outcome)

    monkeypatch.setattr(Recorder, "record", flaky)
    with pytest.raises(OSError, match="No space left"):
        factory_module.run_factory(settings, run_id="run-that-fails")
    monkeypatch.undo()

    (entry,) = load_manifest(data).runs.values()
    assert entry.status == "failed"
    assert entry.reason == "OSError: [Errno 28] No space left on device"
    assert run_query(data, "select count(*) from attempts")[1] == [(3,)]  # committed before

    proc = cli("run", "--resume", "--data", data)
    assert proc.returncode == 0, proc.stderr
    entry = load_manifest(data).runs["run-that-fails"]
    assert (entry.status, entry.reason, entry.resumes) == ("complete", None, 1)
    whole = tmp_path / "whole"
    factory_module.run_factory(settings.model_copy(update={"data": whole}))
    assert run_query(data, OUTCOME)[1] == run_query(whole, OUTCOME)[1]
