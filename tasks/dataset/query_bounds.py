"""What a query may use: where DuckDB spills, how much memory, how long, and Ctrl-C.

- **Spill files** go to one scratch folder per process under the system's temporary
  folder (``TMPDIR``), ``taskfactory-duckdb-<pid>-*``, removed when the process exits;
  one whose process is gone (killed) is removed by the next reader that starts.  Never
  ``./.tmp`` in the caller's folder (DuckDB's default for an in-memory database).
- **Memory and time**: :class:`QueryBounds` (the one place for their bounds).
- **Interrupts**: :class:`Watchdog` calls ``interrupt()`` on the connection when SIGINT or
  SIGTERM arrives or the time is up.  A Python signal handler runs only between
  bytecodes, and the main thread sits inside DuckDB for as long as a query takes, so
  the watchdog is a thread woken by the signal's byte on a wake-up fd
  (``signal.set_wakeup_fd``), which the interpreter writes from its C-level handler at
  once.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import select
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field, field_validator

from environments.processes import pid_alive

SCRATCH_PREFIX = "taskfactory-duckdb-"
MEMORY = r"\d{1,12}(\.\d{1,6})?\s*[KMGT]i?B"
"""A size DuckDB reads: a number and a unit (KB, MB, GB, TB or KiB, MiB, GiB, TiB)."""
_scratch: Path | None = None
_scratch_lock = threading.Lock()


class QueryBounds(BaseModel):
    """The bounds of one user query (``taskfactory query``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_limit: str = Field("2GB", description=(
        "DuckDB's memory limit, like 512MB or 4GB; beyond it a query spills to the scratch "
        "folder, or fails in one line"))
    timeout_s: float = Field(600.0, ge=0, allow_inf_nan=False,
                             description="Seconds before the query is stopped (0: never)")

    @field_validator("memory_limit")
    @classmethod
    def _a_size(cls, value: str) -> str:
        if not re.fullmatch(MEMORY, value.strip(), re.ASCII):
            raise ValueError(f"expected a size like 512MB or 4GB, got {value!r}")
        return value.strip()

    def settings(self) -> dict[str, str | int]:
        """DuckDB settings for :func:`tasks.dataset.query.connect`."""
        return {"memory_limit": self.memory_limit}


def scratch_dir() -> str:
    """This process's spill folder (made on first use, removed at exit; leftovers of dead
    processes are removed first)."""
    global _scratch
    with _scratch_lock:
        if _scratch is None:
            _sweep_dead()
            _scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
            atexit.register(shutil.rmtree, _scratch, True)
        return str(_scratch)


def _sweep_dead() -> None:
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        pid = re.match(rf"{SCRATCH_PREFIX}(\d+)-", folder.name)
        if pid and not pid_alive(int(pid.group(1))) and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)


class Watchdog:
    """While the block runs, SIGINT or SIGTERM (in the main thread) or ``timeout_s``
    seconds (0: never) interrupt ``con``'s query; :attr:`stopped` then says why
    (``"signal"`` or ``"timeout"``), else it is None.  The signal's own handler still
    runs once the query returns (KeyboardInterrupt, for the default handlers)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self.con, self.timeout_s = con, timeout_s
        self.stopped: Literal["signal", "timeout"] | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._previous: int | None = None
        self._thread = threading.Thread(target=self._watch, name="tf-query-watchdog",
                                        daemon=True)

    def __enter__(self) -> Watchdog:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._previous is not None:
            signal.set_wakeup_fd(self._previous)
        with contextlib.suppress(OSError):
            os.write(self._write, b"\0")  # the block is over: stop watching
        self._thread.join()
        os.close(self._read)
        os.close(self._write)

    def _watch(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = max(0.0, deadline - time.monotonic()) if self.timeout_s else None
            # select() takes no timeout past the platform's time_t: wait in hours at most
            ready, _, _ = select.select([self._read], [], [],
                                        None if left is None else min(left, 3600.0))
            if not ready:
                if deadline > time.monotonic():
                    continue
                self.stopped = "timeout"
                break
            byte = os.read(self._read, 1)
            if byte == b"\0":
                return
            if byte[0] in (signal.SIGINT, signal.SIGTERM):
                self.stopped = "signal"
                break
        self.con.interrupt()
