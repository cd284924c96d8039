"""Workflow graphs and candidates: what the planner produces and execution consumes."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Shape = Literal["chain", "fan_out", "fan_in", "diamond"]
TaskKind = Literal["build", "fix", "reconstruct"]
"""``build``: new artifacts from a healthy seeded state; ``fix``: the state starts with a
planted fault that the task repairs (then may build on); ``reconstruct``: the task is to
write the program behind the graph, judged on hidden initial states
(``tasks/reconstruct/cases.py``)."""
TASK_KINDS: tuple[TaskKind, ...] = ("build", "fix", "reconstruct")
Tier = Literal["easy", "medium", "hard"]
"""How hard a run's tasks are made (``--difficulty``): ``medium`` is the default mix;
``easy`` plans short graphs; ``hard`` plans deep graphs with several looked-up values over
a seeded state ten times the size, and keeps only tasks the open-loop solver fails
(:mod:`tasks.plan.tiers`)."""
TIERS: tuple[Tier, ...] = ("easy", "medium", "hard")


class Binding(BaseModel):
    """Where one step input comes from.

    - ``state``: ``value`` is a path or value present in the seeded state;
    - ``step``: the output of upstream step ``step``;
    - ``literal``: ``value`` verbatim (e.g. an output path chosen by the planner);
    - ``sample``: drawn at execution time by sampler ``facet`` from the file bound to
      param ``of``, or from the probed state when ``of`` is unset (deterministic in the
      candidate seed and ``draw``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["state", "step", "literal", "sample"]
    value: str | None = None
    step: str | None = None
    facet: str | None = None
    of: str | None = None
    draw: int = 0
    """For ``sample``: which draw of the sampler (a repair re-draws with 1, 2, ...)."""

    @model_validator(mode="after")
    def _fields_match_kind(self) -> Binding:
        need = {"state": ("value",), "literal": ("value",), "step": ("step",),
                "sample": ("facet",)}[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.kind!r} binding needs {missing}")
        return self

    def pattern(self) -> str:
        """The binding's structure without values, for fingerprints."""
        if self.kind == "step":
            return "step"
        if self.kind == "sample":
            return f"sample:{self.facet}"
        return self.kind


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    tool: str
    bind: dict[str, Binding]


class WorkflowGraph(BaseModel):
    """A DAG of tool steps, listed in a valid execution (topological) order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ecosystem: str
    shape: Shape
    steps: list[Step] = Field(min_length=1)
    fault: str | None = None
    """The fault injector whose defect the graph starts from (a fix task: its first steps
    are the injector's repair tools); None for a build task on the healthy seed."""
    scenario: str | None = None
    """The ecosystem scenario the graph was planned in (its tools come from the scenario's
    recipe and its instruction carries the scenario's motivation); None outside any."""
    reconstruct: bool = False
    """The task is the program behind the graph, run on several initial states of the
    ecosystem (never with a fault)."""

    @property
    def kind(self) -> TaskKind:
        """``reconstruct`` for a program to write, ``fix`` when the graph starts from a
        planted fault, else ``build``."""
        return "reconstruct" if self.reconstruct else "fix" if self.fault else "build"

    @model_validator(mode="after")
    def _acyclic_in_order(self) -> WorkflowGraph:
        if self.reconstruct and self.fault:
            raise ValueError("a reconstruct graph starts from healthy seeds: no fault")
        seen: set[str] = set()
        for step in self.steps:
            if step.id in seen:
                raise ValueError(f"duplicate step id {step.id!r}")
            for name, b in step.bind.items():
                if b.kind == "step" and b.step not in seen:
                    raise ValueError(f"step {step.id!r} input {name!r} uses {b.step!r} "
                                     "which does not run before it")
            seen.add(step.id)
        return self

    @property
    def depth(self) -> int:
        level: dict[str, int] = {}
        for step in self.steps:
            ups = [level[b.step] for b in step.bind.values() if b.kind == "step" and b.step]
            level[step.id] = 1 + max(ups, default=0)
        return max(level.values())

    def without(self, step_ids: set[str]) -> WorkflowGraph:
        """The graph minus ``step_ids`` and every step that depends on them."""
        dropped = set(step_ids)
        for step in self.steps:
            if any(b.kind == "step" and b.step in dropped for b in step.bind.values()):
                dropped.add(step.id)
        kept = [s for s in self.steps if s.id not in dropped]
        return self.model_copy(update={"steps": kept}) if kept else self

    def fingerprint(self) -> str:
        """Structural identity: shape + tool multiset + binding pattern, not values."""
        index = {s.id: i for i, s in enumerate(self.steps)}
        parts = []
        for s in self.steps:
            binds = sorted(
                f"{k}={b.pattern()}"
                + (f"@{index[b.step]}" if b.kind == "step" and b.step is not None else "")
                for k, b in s.bind.items()
            )
            parts.append(f"{s.tool}({','.join(binds)})")
        blob = json.dumps([self.ecosystem, self.shape, parts]
                          + ([self.fault] if self.fault else [])
                          + (["reconstruct"] if self.reconstruct else []))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class Candidate(BaseModel):
    """One workflow graph + one environment seed, on its way to becoming a task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    candidate_id: str
    index: int
    ecosystem: str
    seed: int
    graph: WorkflowGraph
    tier: Tier = "medium"
    """The run's ``--difficulty``: the seeded state's scale and the gate's rules follow it."""
