"""When a candidate may start: ``workers`` places per run and the server's ``sandbox`` slots.

:class:`Admission` submits the candidates' task runs from a thread of its own and hands
the flow their outcomes **in candidate order**.  A candidate is submitted only when

- fewer than ``workers`` of the run's candidates are running (on a thread pool or a Dask
  cluster alike: the task runner's own size is not what bounds a run);
- fewer than ``window`` are submitted and not yet consumed by the flow (the writer takes
  outcomes in order, so this bounds what waits in memory behind a slow candidate);
- the run holds a slot of the server's ``sandbox`` limit for it, when that limit exists
  (:mod:`flows.run.limits`).

So a candidate's task run exists only once it may run: no task run waiting for a slot is
shown as running.  A slot goes back to the run when its candidate's task run finishes
and is handed straight to the run's next candidate, with no request to the server (so
this run's candidates come first for the slots it holds); a slot idle for
:data:`SPARE_S`, or once every candidate has started, is released.  New slots are asked
for by a second thread, :data:`flows.run.limits.POLL_S` apart while the limit is full, so a
slow answer never delays a hand-over; it also renews the leases and releases every slot
when the run stops, normally or not.
"""

import collections
import contextvars
import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from uuid import UUID

from prefect.futures import PrefectFuture

from flows.run import limits
from schemas.graph import Candidate

SPARE_S = 1.0
"""How long a slot this run holds may wait for its next candidate before it is released."""


class Admission:
    """Iterate to run ``todo``: yields (candidate, result or exception) in ``todo`` order."""

    def __init__(self, todo: Iterable[Candidate], submit: Callable[[Candidate], PrefectFuture],
                 workers: int, window: int, flow_run_id: str | None) -> None:
        self.todo, self.submit = iter(todo), submit
        self.workers, self.window = workers, max(window, workers)
        self.flow_run_id = flow_run_id
        self.cond = threading.Condition()
        self.running = self.unconsumed = 0
        self.ready: collections.deque[tuple[Candidate, PrefectFuture]] = collections.deque()
        self.limited = False
        """Whether candidates need a ``sandbox`` slot; decided when the run starts."""
        self.spare: list[tuple[UUID, float]] = []  # slots held for no candidate, since when
        self.wants_slot = self.submitted_all = self.stopping = False
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[tuple[Candidate, object]]:
        self.limited = limits.applies(limits.SANDBOX)  # asked at most once a minute
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(fn,),
                                    name=f"taskfactory-{fn.__name__.strip('_')}", daemon=True)
                   for fn in ([self._feed, self._keep] if self.limited else [self._feed])]
        for t in threads:
            t.start()
        clean = False
        try:
            while True:
                with self.cond:
                    self.cond.wait_for(lambda: self.ready or self.submitted_all or self.error)
                    if self.error is not None:
                        raise self.error
                    if not self.ready:
                        break
                    candidate, future = self.ready.popleft()
                result = future.result(raise_on_failure=False)
                del future
                with self.cond:
                    self.unconsumed -= 1
                    self.cond.notify_all()
                yield candidate, result
            clean = True
        finally:
            with self.cond:
                self.stopping = not clean  # a clean end lets the last slots come back
                self.submitted_all = True
                self.cond.notify_all()
            for t in threads:
                t.join()

    def _fail(self, exc: BaseException) -> None:
        with self.cond:
            self.error = exc
            self.cond.notify_all()

    def _feed(self) -> None:
        """Submit each candidate once it has a place and, where needed, a slot."""
        try:
            for candidate in self.todo:
                with self.cond:
                    while True:
                        if self.stopping or self.error is not None:
                            return
                        place = self.running < self.workers and self.unconsumed < self.window
                        if place and not self.limited:
                            lease = None
                            break
                        if place and self.spare:
                            lease = self.spare.pop()[0]
                            break
                        self.wants_slot = place
                        self.cond.notify_all()
                        self.cond.wait()
                    self.wants_slot = False
                    self.running += 1
                    self.unconsumed += 1
                try:
                    future = self.submit(candidate)
                except BaseException:
                    self._done(lease)
                    raise
                with self.cond:
                    self.ready.append((candidate, future))
                    self.cond.notify_all()
                future.add_done_callback(functools.partial(self._released, lease))
            with self.cond:
                self.submitted_all = True
                self.cond.notify_all()
        except BaseException as exc:  # noqa: BLE001 - handed to the flow's thread
            self._fail(exc)

    def _released(self, lease: UUID | None, _future: object) -> None:
        self._done(lease)

    def _done(self, lease: UUID | None) -> None:
        """A candidate's task run finished: its place and slot are free."""
        with self.cond:
            self.running -= 1
            if lease is not None:
                self.spare.append((lease, time.monotonic()))
            self.cond.notify_all()

    def _keep(self) -> None:
        """Ask the server for slots the feeder wants, renew leases, release spare slots."""
        leases = limits.Leases(limits.SANDBOX, self.flow_run_id)
        retry_at = 0.0
        try:
            while True:
                renew_in = leases.renew_due()
                with self.cond:
                    now = time.monotonic()
                    over = self.stopping or (self.submitted_all and not self.running)
                    idle = [s for s in self.spare
                            if over or self.submitted_all or now - s[1] >= SPARE_S]
                    ask = self.wants_slot and not self.spare and now >= retry_at
                    if over and not idle:
                        return
                    if not (idle or ask):
                        waits = [renew_in, *(at + SPARE_S - now for _, at in self.spare)]
                        if self.wants_slot and not self.spare:
                            waits.append(retry_at - now)
                        self.cond.wait(max(min(waits), 0.0))
                        continue
                    for s in idle:
                        self.spare.remove(s)
                for lease, _ in idle:
                    leases.give(lease)
                if ask:
                    granted, taken, retry = leases.take()
                    with self.cond:
                        if taken is not None:
                            self.spare.append((taken, time.monotonic()))
                        elif granted:  # the limit was removed: candidates run unlimited
                            self.limited = False
                        retry_at = 0.0 if granted else time.monotonic() + retry
                        self.cond.notify_all()
        except BaseException as exc:  # noqa: BLE001 - handed to the flow's thread
            self._fail(exc)
        finally:
            leases.close()  # every slot still held, in use or not
