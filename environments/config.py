"""The base of every backend's configuration: a pydantic model that opens its provider.

A backend is a subclass of :class:`BackendConfig` with a ``type`` literal (its name, the
discriminator of a config file: ``{"type": "docker", "memory_mb": 1024}``) and
``extra="forbid"``.  It names the ``backends`` value of ``ecosystem.yaml`` it can run
(:attr:`BackendConfig.runs`) and names its implementation by import path
(:attr:`BackendConfig.provider_class`, :attr:`BackendConfig.image_builder`), so a config
never imports its backend: :mod:`environments.registry` finds configs by name and opens a
config's provider by the name it gives, only when a provider opens (importing a config
never imports a heavy SDK).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from environments.sandbox import DEFAULT_OUTPUT_CAP, SandboxUnavailableError

if TYPE_CHECKING:
    from environments.ecosystems import Ecosystem


class BackendConfig(BaseModel):
    """Settings of one sandbox backend; subclasses set ``type`` to a ``Literal`` name."""

    model_config = ConfigDict(extra="forbid")

    type: str
    output_cap_bytes: int = Field(default=DEFAULT_OUTPUT_CAP, gt=0)
    """Each of a command's streams keeps only its last this many bytes."""

    runs: ClassVar[Literal["docker", "local"]]
    """Which ``backends`` value of an ``ecosystem.yaml`` this backend serves: ``docker``
    (a container from an image, packages installable) or ``local`` (a host folder)."""

    provider_class: ClassVar[str]
    """``package.module:Class`` of the backend's provider, made as ``Class(config, run_id)``
    by :func:`environments.registry.make_provider` (which imports it only then)."""
    image_builder: ClassVar[str | None] = None
    """``package.module:function`` that gives this config for an ecosystem's image with extra
    packages, ``function(eco, config, packages)``; None: a backend without images."""

    def available(self, timeout: float = 3.0) -> bool:
        """True when what the backend runs on answers now (within ``timeout`` s); a
        backend without an engine is always available."""
        return True

    def for_ecosystem(self, eco: Ecosystem, packages: tuple[str, ...] = ()) -> Self:
        """This config for ``eco``'s sandboxes, with ``packages`` installed on top of the
        ecosystem's own.  ``SandboxUnavailableError`` when the ecosystem does not run on
        this kind of backend or the packages cannot be had."""
        if self.runs not in eco.spec.backends:
            raise SandboxUnavailableError(
                f"ecosystem {eco.name!r} needs the {' or '.join(eco.spec.backends)} backend, "
                f"not {self.type}")
        if self.image_builder is not None:
            built: Self = named(self.image_builder)(eco, self, packages)
            return built
        if packages:
            raise SandboxUnavailableError(f"the {self.type} backend cannot install packages")
        return self


def named(path: str) -> Any:
    """What ``package.module:attribute`` names (ImportError, AttributeError otherwise)."""
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)
