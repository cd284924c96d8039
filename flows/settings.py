"""Run settings: what one factory run is asked to do, validated before any work starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from environments.ecosystems import builtin_names, load_ecosystem
from tasks.plan import DEFAULT_DEPTH_WEIGHTS


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(20, ge=1, description="candidates to plan and run, over all ecosystems")
    seed: int = Field(0, ge=0)
    data: Path = Path("data")
    backend: str = Field("auto", pattern="^(auto|docker|local)$")
    ecosystems: list[str] = Field(default_factory=builtin_names, min_length=1)
    """Built-in names or folders; candidates are split evenly between them."""
    workers: int = Field(4, ge=1, le=64, description="candidates in flight at once")
    max_repairs: int = Field(2, ge=0, le=10, description="targeted repairs per candidate")
    instruction_style: str = Field("goal", pattern="^(goal|step)$")
    """``goal``: the end state to reach; ``step``: the same items as ordered steps."""
    depth_weights: dict[int, float] = Field(default_factory=lambda: dict(DEFAULT_DEPTH_WEIGHTS))
    """Relative weight of each workflow depth (1..8) when planning."""
    shard_rows: int = Field(500, ge=1, le=1_000_000)
    """Rows per table that trigger a commit (shards also commit at 16 MB of buffered data);
    changes the shard layout, not the rows, so it is not part of the config hash."""

    @field_validator("ecosystems")
    @classmethod
    def _distinct(cls, refs: list[str]) -> list[str]:
        if len(set(refs)) != len(refs):
            raise ValueError(f"an ecosystem is named twice: {refs}")
        return refs

    @field_validator("depth_weights")
    @classmethod
    def _depths_in_range(cls, weights: dict[int, float]) -> dict[int, float]:
        if not weights or any(not 1 <= d <= 8 or w < 0 for d, w in weights.items()) \
                or not any(weights.values()):
            raise ValueError("depths must be 1..8 with weights >= 0, at least one positive")
        return weights

    def share(self, position: int) -> int:
        """How many of ``tasks`` candidates the ecosystem at ``position`` gets."""
        n, k = self.tasks, len(self.ecosystems)
        return n // k + (position < n % k)

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
        return self.model_copy(update={"backend": backend, "ecosystems": keep})
