"""What one ``taskfactory solve`` does (imports nothing of Prefect: the CLI checks its
input before Prefect is imported and its API server chosen)."""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.rollouts.agent_loop import Limits


class SolveSettings(BaseModel):
    """What one ``taskfactory solve`` does; the API key is read from the environment, never
    stored.  The defaults are the CLI's; in a deployment run, the fields given are merged
    over the deployment's (:func:`flows.parameters.effective_settings`)."""

    model_config = ConfigDict(extra="forbid")

    data: Path = Path("data")
    where: str | None = None
    k: int = Field(4, ge=1)
    base_url: str
    model: str
    action_space: Literal["terminal", "function"] = "terminal"
    max_turns: int = Field(30, ge=1)
    command_timeout_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    wall_s: float = Field(600.0, gt=0, allow_inf_nan=False)
    temperature: float = Field(1.0, ge=0, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1)
    token_budget: int = Field(5_000_000, ge=1)
    workers: int = Field(4, ge=1)
    ecosystem_dirs: list[Path] = []

    @property
    def sampling(self) -> dict:
        """Sampling parameters sent with every request (recorded in provenance)."""
        params: dict = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    @property
    def limits(self) -> Limits:
        return Limits(self.max_turns, self.command_timeout_s, self.wall_s)
