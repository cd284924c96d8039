"""Server-wide limits: Prefect global concurrency limits shared by every run on a server.

- ``sandbox``: slots for candidates in flight.  A candidate holds one for its whole run
  (every sandbox it opens lives inside that), so the limit bounds what the Docker
  engines run at once over all runs, deployments and Dask workers that use the server
  (``--workers`` bounds one run only).  One slot per candidate, not per sandbox: a
  candidate that rebuilds its image for a package opens the new sandbox before closing
  the old one, and would wait forever for a second slot under a limit of 1.  The flow
  takes the slot before it starts the candidate's task run (:class:`Leases`,
  :mod:`flows.run.admission`), so a waiting candidate is not shown as running.
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
from uuid import UUID

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import ConcurrencyLeaseHolder
from prefect.concurrency.sync import rate_limit
from prefect.context import FlowRunContext, TaskRunContext
from prefect.exceptions import ObjectNotFound

SANDBOX = "sandbox"
LLM = "llm"
RECHECK_S = 60.0
LEASE_S = 60.0
"""A held slot's lease (the server's minimum); renewed every third of it, so the slots of
a flow that dies return to the limit within a minute."""
POLL_S = 0.5
"""The longest wait between two asks while a limit is full: a slot that another process
frees is taken within this.  One this process frees is taken at once
(:mod:`flows.run.admission`)."""

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


class Leases:
    """Slots of the limit ``name`` held for a flow run, each under a lease.

    Not thread-safe: one thread takes, renews and gives them.  Prefect's own acquisition
    (``concurrency()``) sleeps the ``Retry-After`` the server answers while a limit is
    full — about the slots' average holding time times the number of waiters, up to 30 s
    — so a slot freed meanwhile stays idle; here the caller decides how long to wait.
    """

    def __init__(self, name: str, flow_run_id: str | None) -> None:
        self.name = name
        self.holder = ConcurrencyLeaseHolder(type="flow_run", id=UUID(flow_run_id)) \
            if flow_run_id else None
        self.client = get_client(sync_client=True)
        self.client.__enter__()
        self.renewed: dict[UUID, float] = {}  # held lease -> monotonic time last renewed

    def take(self) -> tuple[bool, UUID | None, float]:
        """Ask for one slot: (granted, its lease, seconds to wait before asking again).

        Granted without a lease when the limit no longer exists or is inactive."""
        try:
            response = self.client.increment_concurrency_slots_with_lease(
                names=[self.name], slots=1, mode="concurrency", lease_duration=LEASE_S,
                holder=self.holder)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 423:  # 423 Locked: the limit is full
                raise
            retry = float(exc.response.headers.get("Retry-After", POLL_S))
            return False, None, min(max(retry, POLL_S / 10), POLL_S)
        body = response.json()
        if not body.get("limits"):
            return True, None, 0.0
        lease = UUID(body["lease_id"])
        self.renewed[lease] = time.monotonic()
        return True, lease, 0.0

    def give(self, lease: UUID | None) -> None:
        """Release a slot taken by :meth:`take`."""
        if lease is not None and self.renewed.pop(lease, None) is not None:
            self.client.release_concurrency_slots_with_lease(lease)

    def renew_due(self) -> float:
        """Renew the leases a third of their term old; returns seconds until the next is due."""
        now = time.monotonic()
        for lease, at in list(self.renewed.items()):
            if now - at >= LEASE_S / 3:
                try:
                    self.client.renew_concurrency_lease(lease, lease_duration=LEASE_S)
                    self.renewed[lease] = now
                except httpx.HTTPStatusError:  # expired meanwhile: the server freed the slot
                    del self.renewed[lease]
        return min((LEASE_S / 3 - (now - at) for at in self.renewed.values()),
                   default=LEASE_S / 3)

    def close(self) -> None:
        """Release every slot still held."""
        try:
            for lease in list(self.renewed):
                self.give(lease)
        finally:
            self.client.__exit__(None, None, None)


def llm_request() -> None:
    """Wait until the ``llm`` rate limit lets one more request go, if the limit applies."""
    if applies(LLM):
        rate_limit(LLM, occupy=1)
