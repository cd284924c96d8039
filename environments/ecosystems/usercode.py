"""An ecosystem folder's Python code (seed, samplers, faults, shortcuts), run in worker
processes that can be killed, each call under a timeout.

A user's ecosystem is code the project did not write: a seed that never returns must end
one candidate, not the run.  Each :class:`WorkerPool` imports the folder's modules in
worker processes (``worker.py``) and sends them calls; a call goes to an idle worker (one
is started when none is idle, so concurrent candidates never queue) and must answer
within its timeout, else that worker is KILLed and the call raises
:class:`UserCodeError` with ``timed_out``.  An exception in the user's code comes back
as :class:`UserCodeError` too (its type and message), except a sampler's "no value fits"
(``worker.NO_VALUE``: ``LookupError``, ``ValueError``, ``IndexError`` exactly, not a
``KeyError``), raised as such.

Where a worker runs is its :class:`Channel`: :class:`HostChannel`, a process of this
interpreter on this host (code the user trusts), or a container with no network, no
Docker socket and the folder read-only (:mod:`environments.ecosystems.sandbox`).  Either
way the channel carries JSON (``worker.encode``), never a pickle, and an answer larger
than :data:`MAX_ANSWER` bytes or not in that JSON is the worker's failure, never the
host's.

Workers ignore SIGINT (Ctrl-C is the parent's to handle) and exit as soon as their stdin
closes, so they never outlive the process that started them.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast

from environments.ecosystems.contract import Shapes
from environments.ecosystems.worker import HEADER, NO_VALUE, decode, encode

WORKER = Path(__file__).with_name("worker.py")
IMPORT_TIMEOUT_S = 60.0
"""Importing the folder's modules in a new worker."""
SEED_TIMEOUT_S = 120.0
"""One ``generate``, ``layout`` or ``provide`` call."""
SAMPLER_TIMEOUT_S = 30.0
"""One sampler call."""
MAX_ANSWER = 1 << 30
"""Bytes of one answer: a seed state of a few MB is far below; more is a runaway worker."""


class UserCodeError(Exception):
    """An ecosystem's own code failed: ``what`` it was (``seed.generate(12)``), and the
    exception it raised, or that it ran past its timeout (``timed_out``)."""

    def __init__(self, what: str, detail: str, timed_out: bool = False) -> None:
        super().__init__(what, detail, timed_out)
        self.what, self.detail, self.timed_out = what, detail, timed_out

    def __str__(self) -> str:
        return f"{self.what}: {self.detail}"


class Channel(Protocol):
    """The pipes to one worker process, wherever it runs."""

    def send(self, data: bytes) -> None:
        """Write ``data`` to the worker's stdin (OSError when it is gone)."""

    def read_exact(self, n: int, deadline: float) -> bytes:
        """``n`` bytes of the worker's stdout; TimeoutError after ``deadline``
        (``time.monotonic``), EOFError when its stdout ended."""

    def kill(self) -> None:
        """KILL the worker and release everything the channel holds (idempotent)."""

    def exit_code(self) -> int | None:
        """The worker's exit code once it exited, else None."""


class HostChannel:
    """A worker process of this interpreter on this host, as the invoking user."""

    def __init__(self, folder: Path, modules: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(folder), repr(modules)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_exact(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd, buf = self.proc.stdout.fileno(), bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]

    def exit_code(self) -> int | None:
        return self.proc.poll()


Opener = Callable[[Path, dict[str, str]], Channel]
"""Starts a worker for (folder, modules): :class:`HostChannel` or a sandbox's."""


class _Worker:
    """One worker: its channel, framed JSON both ways."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def send(self, message: object) -> None:
        data = encode(message)
        self.channel.send(HEADER.pack(len(data)) + data)

    def receive(self, timeout_s: float) -> Any:
        """The next answer; ValueError (or TypeError, RecursionError) for one that is not
        :func:`~environments.ecosystems.worker.decode`'s JSON or too large."""
        deadline = time.monotonic() + timeout_s
        (size,) = HEADER.unpack(self.channel.read_exact(HEADER.size, deadline))
        if size > MAX_ANSWER:
            raise ValueError(f"an answer of {size} bytes (more than {MAX_ANSWER})")
        return decode(self.channel.read_exact(size, deadline))

    def kill(self) -> None:
        self.channel.kill()


class WorkerPool:
    """Workers for one ecosystem folder; ``modules`` maps a role (``seed``, ``samplers``)
    to a file of the folder; ``opener`` starts each worker (default: on this host).
    :meth:`start` imports them once (and says what they define), :meth:`call` runs one
    function.  Thread-safe."""

    def __init__(self, folder: Path, modules: dict[str, str],
                 opener: Opener = HostChannel) -> None:
        self.folder, self.modules, self.opener = folder, modules, opener
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def start(self) -> Shapes:
        """Start a worker: each module's public functions with their signatures; raises
        :class:`UserCodeError` when a module raises on import or takes too long."""
        worker = self._new()
        try:
            shapes = cast(Shapes, self._answer(worker, "import", IMPORT_TIMEOUT_S))
        except BaseException:
            worker.kill()
            raise
        self._release(worker)
        return shapes

    def call(self, role: str, function: str, args: tuple[Any, ...], kwargs: dict[str, Any],
             timeout_s: float, what: str) -> Any:
        """``role.function(*args, **kwargs)`` in a worker; its result, or an exception (see
        the module docstring)."""
        worker = self._checkout()
        try:
            worker.send((role, function, args, kwargs))
            result = self._answer(worker, what, timeout_s)
        except BaseException:
            worker.kill()
            raise
        self._release(worker)
        return result

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    def _new(self) -> _Worker:
        return _Worker(self.opener(self.folder, self.modules))

    def _answer(self, worker: _Worker, what: str, timeout_s: float) -> Any:
        try:
            status, value = worker.receive(timeout_s)
        except TimeoutError:
            raise UserCodeError(what, f"did not return within {timeout_s:.0f} s",
                                timed_out=True) from None
        except (EOFError, OSError) as exc:
            code = worker.channel.exit_code()
            raise UserCodeError(what, f"its worker process died (exit code {code}): "
                                f"{type(exc).__name__}") from None
        except (ValueError, TypeError, RecursionError) as exc:
            raise UserCodeError(what, f"its worker sent what is not an answer: {exc}"
                                ) from None
        if status == "ok":
            return value
        try:
            kind, message = (str(v) for v in value)
            if status == "no_value":  # a sampler's worker.NO_VALUE
                error: Exception = {e.__name__: e for e in NO_VALUE}[kind](message)
            else:
                error = UserCodeError(f"import {kind}" if status == "import_error" else what,
                                      message)
        except (ValueError, TypeError, KeyError):
            error = UserCodeError(what, f"its worker sent what is not an answer: {status!r}")
        raise error

    def _checkout(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        worker = self._new()
        try:
            self._answer(worker, "import", IMPORT_TIMEOUT_S)
        except BaseException:
            worker.kill()
            raise
        return worker

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)
