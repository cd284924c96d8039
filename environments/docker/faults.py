"""Which failures of a call to the Docker engine are the engine's, not the sandbox's.

The docker SDK reports an engine that is stopped or restarting as ``requests`` /
``urllib3`` connection errors (or a ``DockerException`` wrapping one), an engine in
trouble as a 5xx ``APIError``, and a container that vanished or stopped under a running
sandbox as 404 "No such container" or 409 "is not running".  :func:`as_infrastructure`
turns those into :class:`InfrastructureError`; anything else is left to the caller.
"""

from __future__ import annotations

import docker.errors
import requests
import urllib3.exceptions

from environments.sandbox import InfrastructureError, SandboxUnavailableError

_UNREACHABLE = (requests.exceptions.RequestException, urllib3.exceptions.HTTPError,
                ConnectionError)
ENGINE_ERRORS = (docker.errors.DockerException, *_UNREACHABLE)
"""What a call to the engine may raise besides ``SandboxError``: catch these, then ask
:func:`as_infrastructure`."""

class EngineUnreachableError(InfrastructureError, SandboxUnavailableError):
    """No Docker engine answers: the backend cannot be used now, and a run that was
    using it waits for it (an engine restart) before it gives up."""


_GONE = ("no such container", "is not running", "is restarting", "is paused",
         "is marked for removal", "removal of container")


def removal_in_progress(exc: BaseException) -> bool:
    """Is ``exc`` the engine's 409 for a container another caller is already removing (the
    container is as good as gone)?"""
    return isinstance(exc, docker.errors.APIError) and exc.status_code == 409 \
        and "already in progress" in str(exc)


def as_infrastructure(exc: BaseException, what: str, server_errors: bool = True
                      ) -> InfrastructureError | None:
    """An ``InfrastructureError`` saying ``what`` failed when ``exc`` is the engine's
    failure (unreachable, 5xx, the container gone or stopped); None otherwise.  Without
    ``server_errors``, a 5xx is not one: the archive calls answer 500 for a path they
    cannot write (a read-only root filesystem), which is the request's fault."""
    if isinstance(exc, InfrastructureError):
        return exc
    if isinstance(exc, docker.errors.APIError):
        status = exc.status_code or 0
        text = str(exc.explanation or exc).lower()
        if (status >= 500 and server_errors) or (
                status in (404, 409) and any(g in text for g in _GONE)):
            return InfrastructureError(f"{what}: the engine answered {status}: "
                                       f"{exc.explanation or exc}")
        return None
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, _UNREACHABLE) or (  # no answer at all: refused, reset, timed out
            isinstance(exc, docker.errors.DockerException) and isinstance(cause, _UNREACHABLE)):
        return InfrastructureError(f"{what}: the Docker engine is unreachable "
                                   f"({type(exc).__name__}: {exc})")
    return None
