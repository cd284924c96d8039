"""Run by the Python of Harbor's own venv (:mod:`tests.support.harbor_venv`), never imported
by the suite: what Harbor's code says of taskfactory's files, and trials written the way
Harbor writes them.  Each command prints one JSON object.

- ``validate PATH...``: every ATIF document, trial and job file in PATH (a folder of job
  folders, or a JSONL file of documents) through Harbor's pydantic models; exits 1 at the
  first that does not validate, naming it.  Counts per job and in all.
- ``trials OUT`` (JSON on stdin: ``[{"task_path", "instruction", "reward", "name"}]``):
  one trial folder per item in OUT, as a Harbor agent's trial of that task would be
  (``agent/trajectory.json`` made with Harbor's ATIF models, ``config.json``,
  ``result.json`` with the reward, ``verifier/reward.txt``).
"""

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.task.id import LocalTaskId
from harbor.models.trajectories import (
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.models.trial.result import AgentInfo, ModelInfo, TrialResult
from harbor.models.verifier.result import VerifierResult


def _check(model, path: Path, text: str | None = None) -> None:
    try:
        model.model_validate_json(text if text is not None else path.read_text())
    except Exception as exc:
        sys.exit(f"{path}: {model.__name__} refuses it: {exc}")


def validate(paths: list[str]) -> dict:
    counts = {"jobs": 0, "trial_configs": 0, "trial_results": 0, "documents": 0,
              "jsonl_documents": 0, "by_job": {}}
    for root in map(Path, paths):
        if root.is_file():
            for n, line in enumerate(root.read_text().splitlines(), start=1):
                _check(Trajectory, Path(f"{root}:{n}"), line)
                counts["jsonl_documents"] += 1
            continue
        for job in sorted(p for p in root.iterdir() if p.is_dir()):
            _check(JobConfig, job / "config.json")
            _check(JobResult, job / "result.json")
            counts["jobs"] += 1
            trials = [t for t in sorted(job.iterdir()) if t.is_dir()]
            for trial in trials:
                _check(TrialConfig, trial / "config.json")
                _check(TrialResult, trial / "result.json")
                _check(Trajectory, trial / "agent" / "trajectory.json")
            counts["trial_configs"] += len(trials)
            counts["trial_results"] += len(trials)
            counts["documents"] += len(trials)
            counts["by_job"][job.name] = len(trials)
    return counts


def _trajectory(instruction: str, name: str) -> Trajectory:
    """A terminal agent's two turns, in the shape Harbor's terminus agent records."""
    return Trajectory(
        schema_version="ATIF-v1.6", session_id=f"session-{name}",
        agent=Agent(name="terminus-2", version="2.0.0", model_name="openai/scripted-model"),
        steps=[
            Step(step_id=1, source="user", message=instruction),
            Step(step_id=2, source="agent", message="Looking around first.",
                 reasoning_content="I should list the workspace.",
                 tool_calls=[ToolCall(tool_call_id="call_0_1", function_name="bash_command",
                                      arguments={"keystrokes": "ls\n", "duration": 0.1})],
                 observation=Observation(results=[ObservationResult(
                     source_call_id="call_0_1", content="data  docs  logs  out\n")]),
                 metrics=Metrics(prompt_tokens=812, completion_tokens=64)),
            Step(step_id=3, source="agent", message="Done.",
                 tool_calls=[ToolCall(tool_call_id="call_1_1",
                                      function_name="mark_task_complete", arguments={})],
                 metrics=Metrics(prompt_tokens=901, completion_tokens=12)),
        ],
        final_metrics=FinalMetrics(total_prompt_tokens=1713, total_completion_tokens=76,
                                   total_steps=3))


def trials(out: Path, items: list[dict]) -> dict:
    now = datetime.now(UTC)
    for item in items:
        trial = out / item["name"]
        (trial / "agent").mkdir(parents=True)
        (trial / "verifier").mkdir()
        doc = _trajectory(item["instruction"], item["name"])
        (trial / "agent" / "trajectory.json").write_text(json.dumps(doc.to_json_dict()))
        config = TrialConfig(task=TaskConfig(path=Path(item["task_path"])),
                             trial_name=item["name"],
                             agent=AgentConfig(name="terminus-2",
                                               model_name="openai/scripted-model"))
        result = TrialResult(
            task_name=Path(item["task_path"]).name, trial_name=item["name"],
            trial_uri=trial.absolute().as_uri(), task_id=LocalTaskId(path=item["task_path"]),
            task_checksum="0" * 16, config=config,
            agent_info=AgentInfo(name="terminus-2", version="2.0.0",
                                 model_info=ModelInfo(name="scripted-model", provider="openai")),
            verifier_result=VerifierResult(rewards={"reward": item["reward"]}),
            started_at=now - timedelta(seconds=30), finished_at=now)
        (trial / "config.json").write_text(config.model_dump_json(indent=2))
        (trial / "result.json").write_text(result.model_dump_json(indent=2))
        (trial / "verifier" / "reward.txt").write_text(f"{item['reward']}\n")
    return {"written": len(items)}


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "validate":
        print(json.dumps(validate(rest)))
    else:
        print(json.dumps(trials(Path(rest[0]), json.loads(sys.stdin.read()))))
