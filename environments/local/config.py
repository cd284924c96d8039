"""The local backend's settings (imports nothing of the backend until a provider opens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from environments.config import BackendConfig

if TYPE_CHECKING:
    from environments.sandbox import SandboxProvider


class LocalConfig(BackendConfig):
    """A temp dir on the host per sandbox, with rlimits (see :mod:`environments.local.backend`)."""

    type: Literal["local"] = "local"
    runs: ClassVar[Literal["docker", "local"]] = "local"
    memory_mb: int = Field(default=1024, gt=0)
    cpu_seconds: int = Field(default=60, gt=0)
    max_file_mb: int = Field(default=64, gt=0)

    def provider(self, run_id: str) -> SandboxProvider:
        from environments.local.backend import LocalProvider

        return LocalProvider(self, run_id)
