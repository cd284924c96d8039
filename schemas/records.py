"""Dataset rows: one pydantic model per Parquet table. Arrow schemas derive from these."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from schemas.verifier import GateResult

SCHEMA_VERSION = 1

Supervision = Literal["masked", "full", "actobs"]
ActionSpace = Literal["function", "terminal"]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION


class TaskRow(_Row):
    """An accepted task: everything needed to run, verify and export it."""

    task_id: str
    run_id: str
    candidate_id: str
    ecosystem: str
    ecosystem_version: str
    seed: int
    shape: str
    depth: int
    n_steps: int
    fingerprint: str
    tools: list[str]
    instruction: str
    answer: str | None
    solution_sh: str
    verifier_py: str
    checks_json: str
    graph_json: str
    trace_json: str
    env_digest: str
    initial_state_sha256: str | None = None
    """sha256 of the probe state execution started from (canonical JSON); exports check
    that a rebuilt environment reproduces it."""
    image: str
    backend: str
    gate: GateResult
    generator_version: str
    created_at: datetime


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: str
    """JSON-encoded arguments, as the OpenAI format stores them."""


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    type: str = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message in OpenAI / Hugging Face shape plus per-message loss flags."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    train: bool = False
    weight: int = 0


class TrajectoryRow(_Row):
    trajectory_id: str
    task_id: str
    run_id: str
    messages: list[Message]
    tools: str
    """JSON-encoded list of function definitions."""
    supervision: Supervision
    action_space: ActionSpace
    reward: float
    n_turns: int
    created_at: datetime


class AttemptRow(_Row):
    """Every candidate, accepted or rejected, with the stage it reached and why."""

    candidate_id: str
    run_id: str
    index: int
    ecosystem: str
    seed: int
    shape: str
    depth: int
    fingerprint: str
    status: Literal["accepted", "rejected"]
    stage: str
    reason: str
    detail: str
    task_id: str | None
    backend: str
    repairs: list[str]
    """One line per repair applied: ``kind step_id reason: detail``."""
    sandboxes: int
    """Sandboxes started for the candidate (execution, the gate's fresh one, rebuilds)."""
    sandbox_s: float
    execute_s: float
    gate_s: float
    render_s: float
    total_s: float
    created_at: datetime


TABLES: dict[str, type[_Row]] = {
    "tasks": TaskRow,
    "trajectories": TrajectoryRow,
    "attempts": AttemptRow,
}
