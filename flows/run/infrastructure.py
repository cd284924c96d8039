"""Infrastructure failures of a candidate: told apart from task outcomes, waited out, retried.

A candidate stopped by the machinery it runs on — the Docker engine unreachable or
restarting, its container gone, the Prefect API unreachable or failing — says nothing
about its task.  :func:`infrastructure_reason` names such a failure (``engine``,
``prefect_api``); :func:`retried` waits for the engine to answer again (bounded) and runs
the candidate again from scratch, in fresh sandboxes; when it still fails, the caller
records the attempt as ``errored`` (never ``rejected``), and ``--resume`` or a same-seed
rerun runs it again.  An errored outcome is raised, never returned, so Prefect's result
cache never holds it.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable
from typing import TypeVar

import httpx

from environments.config import BackendConfig
from environments.docker.faults import ENGINE_ERRORS, as_infrastructure
from environments.sandbox import InfrastructureError
from schemas.records import StageName

log = logging.getLogger(__name__)

TRIES = 3
"""Runs of a candidate that keeps meeting infrastructure failures, the first included."""
ENGINE_WAIT_S = 180.0
"""How long a candidate waits for a Docker engine to answer again before it gives up
(``TASKFACTORY_ENGINE_WAIT_S`` overrides it)."""
PAUSE_S = 5.0
"""Pause before running again after a failure that is not the engine's."""

T = TypeVar("T")


class CandidateErrored(Exception):
    """A candidate stopped by infrastructure at ``stage``: ``reason`` is ``engine`` or
    ``prefect_api``, ``detail`` the exception (type, message, where it was raised)."""

    def __init__(self, stage: StageName, reason: str, detail: str) -> None:
        super().__init__(stage, reason, detail)  # all arguments: it survives pickling
        self.stage, self.reason, self.detail = stage, reason, detail

    def __str__(self) -> str:
        return f"{self.stage}/{self.reason}: {self.detail}"


def infrastructure_reason(exc: BaseException) -> str | None:
    """``engine`` or ``prefect_api`` when ``exc`` is an infrastructure failure, else None."""
    if isinstance(exc, InfrastructureError):
        return "engine"
    if isinstance(exc, ENGINE_ERRORS):
        return "engine" if as_infrastructure(exc, "") is not None else None
    if isinstance(exc, httpx.TransportError) or (
            isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code >= 500):
        return "prefect_api"
    return None


def errored(stage: StageName, exc: BaseException) -> CandidateErrored | None:
    """The :class:`CandidateErrored` for ``exc`` raised at ``stage``, or None when ``exc``
    is not an infrastructure failure."""
    if isinstance(exc, CandidateErrored):
        return exc
    reason = infrastructure_reason(exc)
    if reason is None:
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    where = (f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno} in "
             f"{frames[-1].name})") if frames else ""
    return CandidateErrored(stage, reason, f"{type(exc).__name__}: {exc}{where}")


def wait_for_engine(backend: BackendConfig, max_s: float = ENGINE_WAIT_S,
                    stopping: Callable[[], bool] = lambda: False) -> bool:
    """Ping the backend's engine, backing off from 0.5 s to 10 s, until it answers (True)
    or ``max_s`` passed or ``stopping()`` (False).  The local backend has no engine: True
    at once."""
    deadline, pause = time.monotonic() + max_s, 0.5
    while not backend.available(timeout=3.0):
        if stopping() or time.monotonic() + pause > deadline:
            return False
        for _ in range(int(pause / 0.25)):  # a stopping run is noticed within 0.25 s
            if stopping():
                return False
            time.sleep(0.25)
        pause = min(2 * pause, 10.0)
    return True


def engine_wait_bound() -> float:
    """The engine wait bound: ``TASKFACTORY_ENGINE_WAIT_S`` seconds, else :data:`ENGINE_WAIT_S`."""
    return float(os.environ.get("TASKFACTORY_ENGINE_WAIT_S") or ENGINE_WAIT_S)


def retried(run: Callable[[], T], backend: BackendConfig, name: str,
            tries: int = TRIES, engine_wait_s: float | None = None,
            stopping: Callable[[], bool] = lambda: False) -> T:
    """``run()``, run again (up to ``tries`` in all) while it fails for infrastructure
    reasons, each time once the engine answers; raises :class:`CandidateErrored` when the
    failures outlast the tries, the engine stays away or ``stopping()`` (the run is being
    interrupted).  Other exceptions pass through."""
    wait_s = engine_wait_bound() if engine_wait_s is None else engine_wait_s
    for attempt in range(1, tries + 1):
        try:
            return run()
        except Exception as exc:
            failure = errored("sandbox", exc)
            if failure is None:
                raise
            back = attempt < tries and not stopping() and (
                failure.reason != "engine" or wait_for_engine(backend, wait_s, stopping))
            if not back:
                if failure is exc:
                    raise
                raise failure from exc
            log.warning("%s: %s; running it again (%d of %d)", name, failure, attempt + 1,
                        tries)
            if failure.reason != "engine":
                time.sleep(PAUSE_S)
    raise AssertionError("unreachable")
