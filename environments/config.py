"""Backend configuration for sandboxes, and choosing/creating a provider.

``BackendConfig`` is a discriminated union on ``type`` ("docker" | "local"), so a config
file can say ``{"type": "docker", "memory_mb": 1024}``. Importing this module never
imports the docker SDK; ``make_provider`` imports the backend lazily.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from environments.sandbox import SandboxProvider

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "taskfactory/base:bookworm"
BACKEND_NAMES = ("docker", "local", "auto")
LOCAL_FALLBACK_WARNING = "no Docker daemon answers; using the local backend (weaker isolation)"


class DockerConfig(BaseModel):
    """One hardened container per sandbox (see docker_backend)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["docker"] = "docker"
    image: str = DEFAULT_IMAGE
    network_mode: str = "none"
    cap_drop: list[str] = Field(default_factory=lambda: ["ALL"])
    security_opt: list[str] = Field(default_factory=lambda: ["no-new-privileges"])
    pids_limit: int = Field(default=256, gt=0)
    memory_mb: int = Field(default=512, gt=0)  # memory and memory+swap are set equal
    cpus: float = Field(default=1.0, gt=0)
    user: str = "1000:1000"
    workdir: str = "/workspace"
    workdir_mb: int = Field(default=256, ge=0)
    """The workdir lives on an in-memory filesystem capped at this many MiB (the sandbox's
    snapshots on another, capped at ``memory_mb``); their pages count against
    ``memory_mb``.  A full workdir fails writes with ENOSPC, and the candidates' file
    churn never reaches the engine's disk.  0: the container's disk layer, uncapped."""
    tmp_mb: int = Field(default=128, ge=0)
    """``/tmp``, ``/var/tmp``, ``/run/lock`` and ``home`` are in-memory filesystems capped
    at this many MiB each, and (with ``workdir_mb`` > 0) the root filesystem is read-only:
    nothing a command writes reaches the engine's disk (``environments.docker_mounts``).
    0: those places stay on the container's disk layer, uncapped."""
    home: str = "/home/agent"
    """The sandbox user's home in the image (made an in-memory place, starting empty)."""
    init: bool = True
    output_cap_bytes: int = Field(default=2**20, gt=0)
    # "runner": verbs go through one long-lived process per sandbox inside the container
    # (a few ms per command); "docker-exec": one `docker exec` per command (~50 ms).
    exec_via: Literal["runner", "docker-exec"] = "runner"


class LocalConfig(BaseModel):
    """A temp dir on the host per sandbox, with rlimits (see local_backend)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["local"] = "local"
    memory_mb: int = Field(default=1024, gt=0)
    cpu_seconds: int = Field(default=60, gt=0)
    max_file_mb: int = Field(default=64, gt=0)
    output_cap_bytes: int = Field(default=2**20, gt=0)


BackendConfig = Annotated[DockerConfig | LocalConfig, Field(discriminator="type")]


def docker_available(timeout: float = 3.0) -> bool:
    """True when a Docker daemon answers a ping within ``timeout`` s; False on any error."""
    try:
        import docker
    except Exception:
        return False
    client = None
    try:
        client = docker.from_env(timeout=timeout)
        return bool(client.ping())
    except Exception:
        return False
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


def resolve_backend(name: str) -> DockerConfig | LocalConfig:
    """Default config for backend ``name``: "docker", "local" or "auto".

    "auto" picks docker when a daemon answers, else local, with a WARNING log line
    because the local backend isolates less.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if key == "docker":
        return DockerConfig()
    if key == "local":
        return LocalConfig()
    if key == "auto":
        if docker_available():
            return DockerConfig()
        log.warning(LOCAL_FALLBACK_WARNING)
        return LocalConfig()
    raise ValueError(f"unknown sandbox backend {name!r}; allowed: {', '.join(BACKEND_NAMES)}")


def make_provider(config: DockerConfig | LocalConfig, run_id: str) -> SandboxProvider:
    """Create the provider for ``config`` (imports the backend module only now)."""
    if isinstance(config, DockerConfig):
        from environments.docker_backend import DockerProvider

        return DockerProvider(config, run_id)
    if isinstance(config, LocalConfig):
        from environments.local_backend import LocalProvider

        return LocalProvider(config, run_id)
    raise TypeError(f"not a backend config: {type(config).__name__}")
