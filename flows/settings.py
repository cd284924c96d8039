"""Run settings: what one factory run is asked to do, validated before any work starts.

They are also the ``settings`` parameter of the flow, so every field carries a default
and a description, and fixed choices are enums: a deployment's run form in the Prefect UI
shows each field with its help text and a dropdown where the choices are fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from environments.ecosystems import default_refs, is_stack_ref, load_ecosystem
from schemas.graph import TaskKind, Tier
from tasks.plan.mix import (
    DEFAULT_KINDS,
    DEFAULT_WHERE_POSSIBLE,
    OFF_SCENARIO_SHARE,
    weights_problem,
)
from tasks.plan.planner import DEFAULT_DEPTH_WEIGHTS, DEPTHS
from tasks.plan.tiers import TIER_RULES
from tasks.stages.settings import CandidateSettings


class Backend(StrEnum):
    """Where candidates' sandboxes run."""

    auto = "auto"
    docker = "docker"
    local = "local"


def _weighed(weights: dict) -> dict:
    problem = weights_problem(weights)
    if problem:
        raise ValueError(problem)
    return weights


def up_to_depth(weights: dict[int, float], max_depth: int) -> dict[int, float]:
    """``weights`` without the depths beyond ``max_depth``; ValueError when ``max_depth``
    is not a plannable depth or leaves no depth with a weight."""
    if max_depth not in DEPTHS:
        raise ValueError(f"must be {DEPTHS[0]}..{DEPTHS[-1]} (the plannable depths), "
                         f"got {max_depth}")
    kept = {d: w for d, w in weights.items() if d <= max_depth}
    if not any(kept.values()):
        raise ValueError(f"{max_depth} leaves no depth with a weight")
    return kept


class RunSettings(CandidateSettings):
    """A run's settings: the candidate's (:class:`CandidateSettings`, what its stages read)
    and the run's own (how many, which ecosystems, where, how planned)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(20, ge=1, description="Candidates to plan and run, over all ecosystems; "
                                             "the summary says how many were accepted.")
    seed: int = Field(0, ge=0, description="Run seed: the same seed plans the same candidates "
                                           "and gives the same task ids.")
    data: Path = Field(Path("data"), description=(
        "Dataset folder. A relative path is resolved where the flow runs: under "
        "TASKFACTORY_HOME if that is set there, else under the working directory."))
    backend: Backend = Field(Backend.auto, description=(
        "docker: a hardened container per candidate; local: a temporary folder with "
        "resource limits (weaker isolation); auto: docker when a daemon answers, else local."))
    ecosystems: list[str] = Field(default_refs(), min_length=1, description=(
        "Built-in names (files, git, service, sql), ecosystem folders, and stacks (ecosystems "
        "joined by +, like files+git+sql, or a stack file); candidates are split between "
        "them as stack_share says."))
    stack_share: float = Field(0.3, ge=0, le=1, allow_inf_nan=False, description=(
        "Share of candidates that go to the stacks when the run names stacks and single "
        "ecosystems both (each group split evenly)."))
    workers: int = Field(4, ge=1, le=64, description=(
        "Candidates in flight at once, on a thread pool or a Dask cluster alike."))
    difficulty: Tier = Field("medium", description=(
        "easy: short workflows; medium: the default mix; hard: deep workflows with three or "
        "more values to look up, over a seeded state ten times the size, build tasks only, "
        "each one the open-loop solver fails. Sets the depths (and, for hard, the kinds) "
        "where none are given."))
    depth_weights: dict[int, float] = Field(
        dict(DEFAULT_DEPTH_WEIGHTS),
        description="Relative weight of each workflow depth (1..8) when planning.")
    kinds: dict[TaskKind, float] = Field(
        dict(DEFAULT_KINDS), description=(
            "Relative weight of each task kind: build (new artifacts from a healthy state) and "
            "fix (repair a planted fault, then at most report on the repaired entry), reconstruct "
            "(the program behind a workflow)."))
    where_possible: list[TaskKind] = Field(
        list(DEFAULT_WHERE_POSSIBLE), title="Kinds Where Possible", description=(
            "Kinds asked for where possible: an ecosystem that cannot give one (fix without "
            "fault injectors) plans build tasks instead, and the run says so. A kind asked "
            "for outright that an ecosystem cannot give stops the run before it starts."))
    off_scenario: float = Field(OFF_SCENARIO_SHARE, ge=0, le=1, allow_inf_nan=False,
                                title="Off-Scenario Share",
                                description=(
        "Share of candidates planned outside the ecosystem's scenarios (over all its tools, "
        "with no motivation line); the rest serve one scenario each."))
    shard_rows: int = Field(500, ge=1, le=1_000_000, description=(
        "Rows per table that trigger a shard commit (shards also commit at 16 MB of buffered "
        "data); changes the shard layout, not the rows."))

    @field_validator("ecosystems")
    @classmethod
    def _distinct(cls, refs: list[str]) -> list[str]:
        if len(set(refs)) != len(refs):
            raise ValueError(f"an ecosystem is named twice: {refs}")
        return refs

    @field_validator("depth_weights")
    @classmethod
    def _depths_in_range(cls, weights: dict[int, float]) -> dict[int, float]:
        wrong = [d for d in weights if d not in DEPTHS]
        if wrong:
            raise ValueError(f"depths must be {DEPTHS[0]}..{DEPTHS[-1]}, got {wrong[0]}")
        return _weighed(weights)

    @field_validator("kinds")
    @classmethod
    def _some_kind(cls, weights: dict[TaskKind, float], info: ValidationInfo
                   ) -> dict[TaskKind, float]:
        rules = TIER_RULES[info.data.get("difficulty", "medium")]
        other = sorted(k for k, w in weights.items() if w and k not in (rules.kinds or weights))
        if other:
            raise ValueError(f"--difficulty {info.data['difficulty']} makes "
                             f"{', '.join(rules.kinds or {})} tasks only, not {other[0]}; "
                             "leave --kinds out or ask another difficulty")
        return _weighed(weights)

    @model_validator(mode="before")
    @classmethod
    def _tier_defaults(cls, data: Any) -> Any:
        """The difficulty's depths and kinds where the settings give none."""
        if not isinstance(data, dict) or data.get("difficulty") not in TIER_RULES:
            return data
        rules, data = TIER_RULES[data["difficulty"]], dict(data)
        if rules.depth_weights and data.get("depth_weights") is None:
            data["depth_weights"] = dict(rules.depth_weights)
        if rules.kinds and data.get("kinds") is None:
            data["kinds"], data["where_possible"] = dict(rules.kinds), []
        return data

    def owners(self) -> list[int]:
        """The position (in ``ecosystems``) of the ecosystem each candidate index goes to.

        Stacks (``files+sql``, a stack file) share ``stack_share`` of the candidates
        and single ecosystems the rest, evenly within each group (all evenly when the run
        names only one kind); indices go round by smooth weighted round robin, so equal
        weights give ``0, 1, ..., K-1, 0, 1, ...``."""
        stacked = [is_stack_ref(ref) for ref in self.ecosystems]
        n_stacks = sum(stacked)
        alone = len(stacked) - n_stacks
        both = self.splits_stacks
        weights = [(self.stack_share / n_stacks if st else (1 - self.stack_share) / alone)
                   if both else 1.0 for st in stacked]
        current, total, out = [0.0] * len(weights), sum(weights), []
        for _ in range(self.tasks):
            current = [c + w for c, w in zip(current, weights, strict=True)]
            pick = max(range(len(current)), key=lambda i: (current[i], -i))
            current[pick] -= total
            out.append(pick)
        return out

    @property
    def splits_stacks(self) -> bool:
        """The run names stacks and single ecosystems both (``stack_share`` splits it)."""
        stacked = {is_stack_ref(ref) for ref in self.ecosystems}
        return stacked == {True, False}

    def indices(self, position: int) -> list[int]:
        """The candidate indices of the ecosystem at ``position`` (:meth:`owners`)."""
        return [i for i, owner in enumerate(self.owners()) if owner == position]

    def runnable_on(self, backend: str, warn: Callable[[str], object]) -> RunSettings:
        """These settings on ``backend``, without the ecosystems that cannot run there (each
        one passed to ``warn``); ValueError when none is left."""
        needs = {ref: load_ecosystem(ref).spec.backends for ref in self.ecosystems}
        keep = [ref for ref in self.ecosystems if backend in needs[ref]]
        for ref in self.ecosystems:
            if ref not in keep:
                warn(f"ecosystem {ref} needs the {' or '.join(needs[ref])} backend; "
                     f"left out on {backend}")
        if not keep:
            raise ValueError(f"none of the ecosystems {self.ecosystems} runs on the {backend} "
                             "backend")
        return self.model_copy(update={"backend": Backend(backend), "ecosystems": keep})
