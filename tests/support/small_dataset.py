"""A small real dataset written by the real shard writer, without a flow: one run of
synthetic candidates (an ``attempts`` row and ``steps`` rows each), a commit per two
candidates, and its ``runs`` row."""

from datetime import UTC, datetime
from pathlib import Path

from schemas.records import AttemptRow, Provenance, RunRow, StepRow
from tasks.dataset.runs import begin
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.manifest import save_manifest
from tasks.dataset.store.writer import ShardWriter

RUN = "20261202T000000-abcdef"
PROV = Provenance(run_id=RUN, flow_run_id=None, generator_version="0+test", config_hash="c",
                  seed=0, image_id=None, template_hash="t", llm_model=None, llm_params=None,
                  created_at=datetime(2026, 12, 2, tzinfo=UTC))


def group(i: int, steps: int = 2) -> list:
    """One candidate's rows: its attempt and ``steps`` step rows."""
    attempt = AttemptRow(
        candidate_id=f"c{i:03d}", run_id=RUN, index=i, ecosystem="files", seed=i,
        shape="chain", depth=1, fingerprint=f"f{i}", status="rejected", stage="execute",
        reason="binding", detail="", task_id=None, backend="local", repairs=[], sandboxes=1,
        sandbox_s=0.1, execute_s=0.1, gate_s=0.0, render_s=0.0, total_s=0.2,
        created_at=PROV.created_at, provenance=PROV)
    return [("attempts", attempt)] + [("steps", StepRow(
        task_id=f"t{i}", run_id=RUN, position=k, step_id=f"s{k}", tool="grep", args_json="{}",
        command="grep x", exit_code=0, stdout=str(i), stderr="", truncated=False,
        duration_s=0.01, output_type="lines", provenance=PROV)) for k in range(steps)]


def build(data: Path, n: int = 6, complete: bool = True) -> Path:
    """A run of ``n`` candidates, one commit per two candidates, and its runs row."""
    with open_for_writing(data) as manifest:
        entry = begin(manifest, RUN, {"tasks": n}, "c", None)
        save_manifest(data, manifest)
        writer = ShardWriter(data, manifest, RUN, max_rows=4)
        for i in range(n):
            writer.add_group(group(i))
        writer.commit()
        if complete:
            entry.status = "complete"
            writer.add_group([("runs", RunRow(
                run_id=RUN, flow_run_id=None, settings_json="{}", config_hash="c",
                generator_version="0+test", status="complete", started_at=PROV.created_at,
                finished_at=PROV.created_at, resumes=0, candidates=n, skipped=0, accepted=0,
                rejected=n, duplicates=0, provenance=PROV))])
            writer.commit()
    return data
