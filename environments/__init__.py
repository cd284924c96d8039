"""Execution environments: sandboxes (docker or local) in which task commands run.

Importing this package never imports the docker SDK; backends load lazily via
``make_provider``.
"""

from environments.config import (
    BackendConfig,
    DockerConfig,
    LocalConfig,
    docker_available,
    make_provider,
    resolve_backend,
)
from environments.sandbox import (
    ExecResult,
    InfrastructureError,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxProvider,
    SandboxUnavailableError,
    Snapshot,
)

__all__ = [
    "BackendConfig",
    "DockerConfig",
    "ExecResult",
    "InfrastructureError",
    "LocalConfig",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxProvider",
    "SandboxUnavailableError",
    "Snapshot",
    "docker_available",
    "make_provider",
    "resolve_backend",
]
