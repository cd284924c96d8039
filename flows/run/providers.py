"""One sandbox provider per (backend config, run id) per process, shared by worker threads."""

from __future__ import annotations

import logging
import threading

from environments.config import BackendConfig
from environments.registry import make_provider
from environments.sandbox import InfrastructureError, SandboxProvider

log = logging.getLogger(__name__)

_lock = threading.Lock()
_providers: dict[tuple[str, str], SandboxProvider] = {}
_closed: set[str] = set()


def provider_for(config: BackendConfig, run_id: str) -> SandboxProvider:
    key = (config.model_dump_json(), run_id)
    with _lock:
        if key not in _providers:
            _providers[key] = make_provider(config, run_id)
        return _providers[key]


def close_run(run_id: str) -> int:
    """Close every provider of ``run_id`` and reap its sandboxes; returns how many were reaped.
    With the engine away, what is left is logged and reaped by a later run (its owner, this
    process, will be dead by then)."""
    with _lock:
        _closed.add(run_id)
        mine = [(k, p) for k, p in _providers.items() if k[1] == run_id]
        for k, _ in mine:
            del _providers[k]
    reaped = 0
    for _, provider in mine:
        try:
            provider.close()
            reaped += provider.reap(run_id)
        except InfrastructureError as exc:
            log.warning("sandboxes of run %s left for a later run to reap: %s", run_id, exc)
    return reaped


def run_closed(run_id: str) -> bool:
    """True once :func:`close_run` was called for ``run_id`` (the run is stopping), until
    :func:`open_run`."""
    return run_id in _closed


def open_run(run_id: str) -> None:
    """``run_id`` runs (again) in this process: :func:`run_closed` is False."""
    with _lock:
        _closed.discard(run_id)
