"""The base of every backend's configuration: a pydantic model that opens its provider.

A backend is a subclass of :class:`BackendConfig` with a ``type`` literal (its name, the
discriminator of a config file: ``{"type": "docker", "memory_mb": 1024}``) and
``extra="forbid"``.  It names the ``backends`` value of ``ecosystem.yaml`` it can run
(:attr:`BackendConfig.runs`) and imports its implementation only in :meth:`provider`, so
importing a config never imports a heavy SDK.  :mod:`environments.registry` finds configs
by name.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from environments.sandbox import SandboxUnavailableError

if TYPE_CHECKING:
    from environments.ecosystems import Ecosystem
    from environments.sandbox import SandboxProvider


class BackendConfig(BaseModel, abc.ABC):
    """Settings of one sandbox backend; subclasses set ``type`` to a ``Literal`` name."""

    model_config = ConfigDict(extra="forbid")

    type: str
    output_cap_bytes: int = Field(default=2**20, gt=0)
    """Each of a command's streams keeps only its last this many bytes."""

    runs: ClassVar[Literal["docker", "local"]]
    """Which ``backends`` value of an ``ecosystem.yaml`` this backend serves: ``docker``
    (a container from an image, packages installable) or ``local`` (a host folder)."""

    @abc.abstractmethod
    def provider(self, run_id: str) -> SandboxProvider:
        """A new provider of sandboxes for run ``run_id`` (imports the backend now).
        ``SandboxUnavailableError`` when the backend cannot be used here."""

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
        return self._with_image(eco, packages)

    def _with_image(self, eco: Ecosystem, packages: tuple[str, ...]) -> Self:
        """The config for ``eco`` with ``packages``; a backend without images refuses
        packages."""
        if packages:
            raise SandboxUnavailableError(f"the {self.type} backend cannot install packages")
        return self
