"""Sandbox backends by name: ``docker``, ``local``, or your own by import path.

A backend is a :class:`~environments.config.BackendConfig` subclass.  The built-ins are
found by name; any other is named ``package.module:ConfigClass`` (its module must be
importable) and is then known by its ``type`` as well.  Only the named config module is
imported: a backend's implementation (and its SDK) loads when its provider opens.

    config = resolve_backend("local")               # or "docker", "auto", "pkg.mod:Config"
    with make_provider(config, run_id="r1").sandbox() as sb:
        sb.exec(["true"])

An unknown name raises :class:`UnknownBackendError`, one line naming the known ones and
how to add one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from environments.config import BackendConfig, named
from environments.sandbox import SandboxProvider

log = logging.getLogger(__name__)

BUILTIN: dict[str, str] = {
    "docker": "environments.docker.config:DockerConfig",
    "local": "environments.local.config:LocalConfig",
}
AUTO = "auto"
LOCAL_FALLBACK_WARNING = "no Docker daemon answers; using the local backend (weaker isolation)"
_by_type: dict[str, type[BackendConfig]] = {}
"""Backends loaded in this process, by their ``type`` (built-ins and import paths)."""


class UnknownBackendError(ValueError):
    """No backend has that name, or an import path names no ``BackendConfig``."""


def backend_names() -> list[str]:
    """The names ``resolve_backend`` takes without an import path, ``auto`` included."""
    return [AUTO, *sorted({*BUILTIN, *_by_type})]


def _unknown(name: str, why: str) -> UnknownBackendError:
    return UnknownBackendError(
        f"unknown sandbox backend {name!r} ({why}): use one of {', '.join(backend_names())}, "
        "or add one as package.module:ConfigClass, a subclass of "
        "environments.config.BackendConfig")


def _load(path: str) -> type[BackendConfig]:
    try:
        found = named(path)
    except (ImportError, AttributeError) as exc:
        raise _unknown(path, f"{type(exc).__name__}: {exc}") from None
    if not (isinstance(found, type) and issubclass(found, BackendConfig)):
        raise _unknown(path, "not a subclass of BackendConfig")
    return register(found)


def register(config_class: type[BackendConfig]) -> type[BackendConfig]:
    """Make ``config_class`` known by its ``type`` (usable as a class decorator)."""
    name = config_class.model_fields["type"].default
    if not isinstance(name, str) or not name:
        raise _unknown(config_class.__qualname__, "its type field has no default name")
    known = _by_type.get(name)
    if known is not None and known is not config_class:
        raise UnknownBackendError(f"two sandbox backends are named {name!r}: "
                                  f"{known.__module__} and {config_class.__module__}")
    _by_type[name] = config_class
    return config_class


def config_class(name: str) -> type[BackendConfig]:
    """The config class of backend ``name``: a built-in, a loaded one, or an import path
    (``package.module:ConfigClass``)."""
    key = name.strip()
    if key in _by_type:
        return _by_type[key]
    if key in BUILTIN:
        return _load(BUILTIN[key])
    if ":" in key:
        return _load(key)
    raise _unknown(name, "not a built-in name or a package.module:ConfigClass path")


def resolve_backend(name: str) -> BackendConfig:
    """The default config of backend ``name``.  ``auto`` is docker when an engine answers,
    else local with a WARNING log line, because the local backend isolates less."""
    key = name.strip().lower() if ":" not in name else name.strip()
    if key != AUTO:
        return config_class(key).model_validate({})
    docker = config_class("docker").model_validate({})
    if docker.available():
        return docker
    log.warning(LOCAL_FALLBACK_WARNING)
    return config_class("local").model_validate({})


def parse_backend(data: Mapping[str, Any]) -> BackendConfig:
    """A config from its fields, chosen by ``type`` (a name or an import path)."""
    kind = data.get("type")
    if not isinstance(kind, str):
        raise UnknownBackendError("a sandbox backend config needs a 'type' (e.g. docker)")
    cls = config_class(kind)
    return cls.model_validate({**data, "type": cls.model_fields["type"].default})


def make_provider(config: BackendConfig, run_id: str) -> SandboxProvider:
    """A new provider for ``config`` (its backend module, named by the config's
    ``provider_class``, is imported only now).  ``SandboxUnavailableError`` when the
    backend cannot be used here."""
    provider: SandboxProvider = named(config.provider_class)(config, run_id)
    return provider
