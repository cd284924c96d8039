"""Executed traces: what really ran, step by step."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False


class StepTrace(BaseModel):
    """One executed step: resolved arguments, the exact command, what came back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_id: str
    tool: str
    args: dict[str, str]
    command: str
    observation: Observation
    output: Any = None
    output_type: str


class Repair(BaseModel):
    """One targeted repair applied while executing a graph."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    """``truncate``: the failing step and the steps that depend on it were dropped."""
    step_id: str
    reason: str
    detail: str
    dropped: list[str]


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[StepTrace]
    answer: str | None = None
    """The final read step's parsed output, rendered as text, for read-ending workflows."""
    repairs: list[Repair] = []
