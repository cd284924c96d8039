"""Run settings: what one factory run is asked to do, validated before any work starts."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(20, ge=1, description="candidates to plan and run")
    seed: int = Field(0, ge=0)
    data: Path = Path("data")
    backend: str = Field("auto", pattern="^(auto|docker|local)$")
    ecosystem: str = "files"
    workers: int = Field(4, ge=1, le=64, description="candidates in flight at once")
    max_depth: int = Field(3, ge=1, le=8)
