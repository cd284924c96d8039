"""The local backend's settings (imports nothing of the backend: the registry opens
:attr:`LocalConfig.provider_class` by name)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from environments.config import BackendConfig


class LocalConfig(BackendConfig):
    """A temp dir on the host per sandbox, with rlimits (see :mod:`environments.local.backend`)."""

    type: Literal["local"] = "local"
    runs: ClassVar[Literal["docker", "local"]] = "local"
    provider_class: ClassVar[str] = "environments.local.backend:LocalProvider"
    memory_mb: int = Field(default=1024, gt=0)
    cpu_seconds: int = Field(default=60, gt=0)
    max_file_mb: int = Field(default=64, gt=0)
