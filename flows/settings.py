"""Run settings: what one factory run is asked to do, validated before any work starts."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.plan import DEFAULT_DEPTH_WEIGHTS


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(20, ge=1, description="candidates to plan and run")
    seed: int = Field(0, ge=0)
    data: Path = Path("data")
    backend: str = Field("auto", pattern="^(auto|docker|local)$")
    ecosystem: str = "files"
    workers: int = Field(4, ge=1, le=64, description="candidates in flight at once")
    max_repairs: int = Field(2, ge=0, le=10, description="targeted repairs per candidate")
    instruction_style: str = Field("goal", pattern="^(goal|step)$")
    """``goal``: the end state to reach; ``step``: the same items as ordered steps."""
    depth_weights: dict[int, float] = Field(default_factory=lambda: dict(DEFAULT_DEPTH_WEIGHTS))
    """Relative weight of each workflow depth (1..8) when planning."""

    @field_validator("depth_weights")
    @classmethod
    def _depths_in_range(cls, weights: dict[int, float]) -> dict[int, float]:
        if not weights or any(not 1 <= d <= 8 or w < 0 for d, w in weights.items()) \
                or not any(weights.values()):
            raise ValueError("depths must be 1..8 with weights >= 0, at least one positive")
        return weights
