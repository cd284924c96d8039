"""The docker backend's settings, and whether a Docker engine answers.

Importing this module never imports the docker SDK, nor the backend: the registry opens
:attr:`DockerConfig.provider_class` by name, and :func:`docker_available` imports the SDK
when called.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar, Literal

from pydantic import Field

from environments.config import BackendConfig

DEFAULT_IMAGE = "taskfactory/base:bookworm"


class DockerConfig(BackendConfig):
    """One hardened container per sandbox (see :mod:`environments.docker.backend`)."""

    type: Literal["docker"] = "docker"
    runs: ClassVar[Literal["docker", "local"]] = "docker"
    provider_class: ClassVar[str] = "environments.docker.backend:DockerProvider"
    image_builder: ClassVar[str | None] = "environments.docker.images:ecosystem_image"
    image: str = DEFAULT_IMAGE
    network_mode: str = "none"
    cap_drop: list[str] = Field(default_factory=lambda: ["ALL"])
    security_opt: list[str] = Field(default_factory=lambda: ["no-new-privileges"])
    pids_limit: int = Field(default=256, gt=0)
    memory_mb: int = Field(default=512, gt=0)  # memory and memory+swap are set equal
    cpus: float = Field(default=1.0, gt=0)
    user: str = "1000:1000"
    """The sandbox user: every command runs as it unless ``privileged`` (then as root)."""
    admin_caps: list[str] = Field(default_factory=lambda: [
        "CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"])
    """The capabilities root keeps in the container (everything else is dropped): what a
    verifier needs to stop the sandbox user's processes, read its files, own its logs
    folder and run an agent's program as the sandbox user.  The sandbox user never holds
    any: a non-root uid starts without capabilities, and ``no-new-privileges`` forbids
    gaining one."""
    logs_dir: str = "/logs/verifier"
    """A folder every user may write (an in-memory filesystem), as Harbor's runner makes
    ``/logs/verifier``: the verifier takes it over and writes its reward there."""
    workdir: str = "/workspace"
    workdir_mb: int = Field(default=256, ge=0)
    """The workdir lives on an in-memory filesystem capped at this many MiB (the sandbox's
    snapshots on another, capped at ``memory_mb``); their pages count against
    ``memory_mb``.  A full workdir fails writes with ENOSPC, and the candidates' file
    churn never reaches the engine's disk.  0: the container's disk layer, uncapped."""
    tmp_mb: int = Field(default=128, ge=0)
    """``/tmp``, ``/var/tmp``, ``/run/lock`` and ``home`` are in-memory filesystems capped
    at this many MiB each, and (with ``workdir_mb`` > 0) the root filesystem is read-only:
    nothing a command writes reaches the engine's disk (``environments.docker.mounts``).
    0: those places stay on the container's disk layer, uncapped."""
    home: str = "/home/agent"
    """The sandbox user's home in the image (made an in-memory place, starting empty)."""
    init: bool = True
    reuse: bool = True
    """A closed sandbox's container is reset and kept for the provider's next sandbox when
    the reset leaves nothing a fresh container would not have (processes, files, IPC
    objects, sockets); see :mod:`environments.docker.backend`.  False: every sandbox gets
    a new container, removed when it closes."""
    # "runner": verbs go through one long-lived process per sandbox inside the container
    # (a few ms per command); "docker-exec": one `docker exec` per command (~50 ms).
    exec_via: Literal["runner", "docker-exec"] = "runner"

    def available(self, timeout: float = 3.0) -> bool:
        return docker_available(timeout)


def docker_available(timeout: float = 3.0) -> bool:
    """True when a Docker daemon answers a ping within ``timeout`` s; False on any error."""
    try:
        import docker
    except Exception:
        return False
    client = None
    try:
        client = docker.from_env(timeout=round(timeout) or 1)
        return bool(client.ping())
    except Exception:
        return False
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
