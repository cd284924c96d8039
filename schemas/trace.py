"""Executed traces: what really ran, step by step, and what repairs changed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False


class DiscoveryTrace(BaseModel):
    """One discovery run before a step: the ecosystem's discovery tool, its arguments,
    the exact command and what it printed in the state that step started from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    args: dict[str, str]
    command: str
    observation: Observation


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
    discoveries: list[DiscoveryTrace] = []
    """What the agent inspects before this step, first use only (run before the step)."""
    digest: str | None = None
    """For a write step, the digest of the entry it wrote, under its section's compare mode
    (``tasks/execute/purpose.py``); None for reads and for outputs no probe section holds."""


RepairKind = Literal["provide_file", "provide_dir", "add_package", "rebind", "substitute",
                     "llm_rebind", "llm_substitute", "truncate"]


class Repair(BaseModel):
    """One targeted repair applied while executing a graph.

    - ``provide_file`` / ``provide_dir`` / ``add_package``: the environment was realized
      again with the missing file, directory or Debian package (``detail`` names it);
    - ``rebind`` / ``llm_rebind``: one argument of the failing step got another value;
    - ``substitute`` / ``llm_substitute``: the failing step runs a type-compatible tool;
    - ``truncate``: the failing step and the steps that depend on it (``dropped``) were cut.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RepairKind
    step_id: str
    reason: str
    detail: str
    dropped: list[str] = []


class EnvAdditions(BaseModel):
    """What repairs added to the seeded environment; part of the task's environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: dict[str, str] = Field(default_factory=dict)
    """Workspace path -> UTF-8 text, written after the ecosystem's setup."""
    dirs: list[str] = Field(default_factory=list)
    packages: list[str] = Field(default_factory=list)
    """Debian packages installed in the image on top of the ecosystem's own."""

    def __bool__(self) -> bool:
        return bool(self.files or self.dirs or self.packages)


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[StepTrace]
    answer: str | None = None
    """The final read step's parsed output, rendered as text, for read-ending workflows."""
    repairs: list[Repair] = []
    environment: EnvAdditions = Field(default_factory=EnvAdditions)
