"""Dataset rows: one pydantic model per Parquet table. Arrow schemas derive from these."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from schemas.verifier import GateResult

SCHEMA_VERSION = 1

Supervision = Literal["masked", "full", "actobs"]
ActionSpace = Literal["function", "terminal"]
InstructionStyle = Literal["goal", "step"]
LLM_SUFFIX = "+llm:"
"""Appended to a ``template_id``, with the model, when an LLM paraphrase was kept."""


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
    instruction_style: InstructionStyle
    template_id: str
    """The template variant that rendered the instruction: ``style/layout/opener/closer``
    (``+llm:<model>`` appended when an LLM paraphrase was kept)."""
    instruction_literals: list[str]
    """Every literal the instruction must hold as a Markdown code span (preservation)."""
    answer: str | None
    solution_sh: str
    verifier_py: str
    checks_json: str
    graph_json: str
    trace_json: str
    env_digest: str
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
    """One chat message in OpenAI / Hugging Face shape plus per-message loss flags.

    ``train`` / ``weight`` say whether the whole message is trained (axolotl's
    ``message_field_training``, OpenAI fine-tuning's ``weight``).  ``reasoning_content``
    is the assistant's reasoning for that turn; rows that do not train reasoning leave it
    out, since a per-message flag cannot exclude part of a message.
    """

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
    """``masked``: assistant tool calls and final answer trained, no reasoning;
    ``full``: also the reasoning; ``actobs``: also the tool observations."""
    action_space: ActionSpace
    """``function``: the ecosystem's typed tools; ``terminal``: one ``bash`` tool."""
    reward: float
    n_turns: int
    """Assistant messages."""
    rendering: str = "template"
    """``template``, or ``llm:<model>`` when the reasoning came from an LLM."""
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
