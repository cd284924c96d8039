"""An ecosystem folder's Python code (seed and samplers), run in worker processes that
can be killed, each call under a timeout.

A user's ecosystem is code the project did not write: a seed that never returns must end
one candidate, not the run.  Each :class:`WorkerPool` imports the folder's modules in
worker processes (``worker.py``, started with this interpreter) and sends them calls; a
call goes to an idle worker (one is started when none is idle, so concurrent candidates
never queue) and must answer within its timeout, else that worker is KILLed and the call
raises :class:`UserCodeError` with ``timed_out``.  An exception in the user's code comes
back as :class:`UserCodeError` too (its type and message), except a sampler's "no value
fits" (``worker.NO_VALUE``: ``LookupError``, ``ValueError``, ``IndexError`` exactly, not
a ``KeyError``), raised as such.

Workers ignore SIGINT (Ctrl-C is the parent's to handle) and exit when their stdin
closes, so they never outlive the process that started them.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

from environments.ecosystems.contract import Shapes
from environments.ecosystems.worker import NO_VALUE

WORKER = Path(__file__).with_name("worker.py")
IMPORT_TIMEOUT_S = 60.0
"""Importing the folder's modules in a new worker."""
SEED_TIMEOUT_S = 120.0
"""One ``generate``, ``layout`` or ``provide`` call."""
SAMPLER_TIMEOUT_S = 30.0
"""One sampler call."""
_HEADER = struct.Struct(">Q")


class UserCodeError(Exception):
    """An ecosystem's own code failed: ``what`` it was (``seed.generate(12)``), and the
    exception it raised, or that it ran past its timeout (``timed_out``)."""

    def __init__(self, what: str, detail: str, timed_out: bool = False) -> None:
        super().__init__(what, detail, timed_out)
        self.what, self.detail, self.timed_out = what, detail, timed_out

    def __str__(self) -> str:
        return f"{self.what}: {self.detail}"


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, folder: Path, modules: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(folder), repr(modules)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, message: object) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        assert self.proc.stdin is not None
        self.proc.stdin.write(_HEADER.pack(len(data)) + data)
        self.proc.stdin.flush()

    def receive(self, timeout_s: float) -> Any:
        assert self.proc.stdout is not None
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + timeout_s
        (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
        return pickle.loads(_read_exact(fd, size, deadline))

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]


class WorkerPool:
    """Workers for one ecosystem folder; ``modules`` maps a role (``seed``, ``samplers``)
    to a file of the folder.  :meth:`start` imports them once (and says what they
    define), :meth:`call` runs one function.  Thread-safe."""

    def __init__(self, folder: Path, modules: dict[str, str]) -> None:
        self.folder, self.modules = folder, modules
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def start(self) -> Shapes:
        """Start a worker: each module's public functions with their signatures; raises
        :class:`UserCodeError` when a module raises on import or takes too long."""
        worker = _Worker(self.folder, self.modules)
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

    def _answer(self, worker: _Worker, what: str, timeout_s: float) -> Any:
        try:
            status, value = worker.receive(timeout_s)
        except TimeoutError:
            raise UserCodeError(what, f"did not return within {timeout_s:.0f} s",
                                timed_out=True) from None
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            code = worker.proc.poll()
            raise UserCodeError(what, f"its worker process died (exit code {code}): "
                                f"{type(exc).__name__}") from None
        if status == "ok":
            return value
        kind, message = value
        if status == "import_error":
            raise UserCodeError(f"import {kind}", message)
        if status == "no_value":  # a sampler's worker.NO_VALUE
            raise {e.__name__: e for e in NO_VALUE}[kind](message)
        raise UserCodeError(what, message)

    def _checkout(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        worker = _Worker(self.folder, self.modules)
        try:
            self._answer(worker, "import", IMPORT_TIMEOUT_S)
        except BaseException:
            worker.kill()
            raise
        return worker

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)
