"""Server-wide limits: Prefect global concurrency limits shared by every run on a server.

- ``sandbox``: slots for candidates in flight.  A candidate holds one for its whole run
  (every sandbox it opens lives inside that), so the limit bounds what the Docker
  engines run at once over all runs, deployments and Dask workers that use the server
  (``--workers`` bounds one run only).  One slot per candidate, not per sandbox: a
  candidate that rebuilds its image for a package opens the new sandbox before closing
  the old one, and would wait forever for a second slot under a limit of 1.
- ``llm``: a rate limit on requests to the LLM endpoint: a limit whose slots decay,
  ``slot_decay_per_second`` requests per second with bursts of up to ``limit``.

A limit applies where it exists, active, on the run's Prefect server::

    prefect gcl create sandbox --limit 8
    prefect gcl create llm --limit 2 --slot-decay-per-second 1

Whether it exists is asked at most once per :data:`RECHECK_S` per process, so without
limits a candidate costs no extra API call.  Outside a Prefect flow or task run (library
use, tests of a single stage) there is no server to ask, and nothing is limited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency, rate_limit
from prefect.context import FlowRunContext, TaskRunContext
from prefect.exceptions import ObjectNotFound

SANDBOX = "sandbox"
LLM = "llm"
RECHECK_S = 60.0

_lock = threading.Lock()
_checked: dict[str, tuple[float, bool]] = {}  # name -> (monotonic time asked, exists)


def applies(name: str) -> bool:
    """True when the global concurrency limit ``name`` exists and is active on the server
    of the current run; False outside a run."""
    if TaskRunContext.get() is None and FlowRunContext.get() is None:
        return False
    now = time.monotonic()
    with _lock:
        seen = _checked.get(name)
    if seen is not None and now - seen[0] < RECHECK_S:
        return seen[1]
    try:
        with get_client(sync_client=True) as client:
            found = client.read_global_concurrency_limit_by_name(name).active
    except ObjectNotFound:
        found = False
    with _lock:
        _checked[name] = (now, found)
    return found


def recheck() -> None:
    """Forget what this process learned about the server's limits: the next use asks."""
    with _lock:
        _checked.clear()


@contextmanager
def sandbox_slot() -> Iterator[None]:
    """Hold one ``sandbox`` slot (waiting for it) while the block runs, if the limit applies."""
    if not applies(SANDBOX):
        yield
        return
    with concurrency(SANDBOX, occupy=1):  # removed meanwhile: runs unlimited
        yield


def llm_request() -> None:
    """Wait until the ``llm`` rate limit lets one more request go, if the limit applies."""
    if applies(LLM):
        rate_limit(LLM, occupy=1)
