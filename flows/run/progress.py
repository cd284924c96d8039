"""Progress of a long command: a live line on a terminal, a plain line at a fixed interval
elsewhere, and (for a flow) a Prefect progress artifact.

The line (on stderr) says how many items are done and how they ended (``accepted`` and
``rejected`` for a run's candidates, other words for other commands), the rate of good
ones per minute and the time left at that pace.  On a terminal it is rewritten in place
every second; otherwise (a log file, CI, a worker's log) a line is printed every
``every_s`` seconds while work goes on, whether or not an item ended, and once at the end.
``TASKFACTORY_QUIET=1`` (the commands' ``--quiet``) turns the line off.  The Prefect
artifact's percentage is updated at most every ``every_s`` seconds, so long runs cost
few API calls.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO, cast
from uuid import UUID

QUIET = "TASKFACTORY_QUIET"
"""Set to 1 (by ``--quiet``): no progress line."""


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Ticker:
    """Counts outcomes as they arrive and shows them; call :meth:`done` once per item and
    :meth:`close` at the end (a context manager does).  Off a terminal a line comes when an
    item ends ``every_s`` seconds or more after the last line, and otherwise every
    ``every_s`` seconds (every second when it is 0) while work goes on; the closing line
    only when it would say something new (a command that fails before any item ends shows
    its error alone).  Imports nothing of Prefect."""

    def __init__(self, total: int, stream: TextIO | None = None, every_s: float = 5.0,
                 words: tuple[str, str] = ("accepted", "rejected")) -> None:
        self.total, self.every_s, self.words = total, every_s, words
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.quiet = os.environ.get(QUIET) == "1"
        self.finished = self.good = 0
        self.started = self._last = time.monotonic()
        self._shown: int | None = None
        """How many items had finished when the last line was shown (None: no line yet)."""
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._beat = threading.Thread(target=self._beats, name="progress", daemon=True)
        if not self.quiet and total:
            self._beat.start()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.good / elapsed * 60
        left = (f"ETA {_clock((self.total - self.finished) * elapsed / self.finished)}"
                if self.finished else "ETA -")
        return (f"{self.finished}/{self.total} done, {self.good} {self.words[0]}, "
                f"{self.finished - self.good} {self.words[1]}, {rate:.0f} {self.words[0]}/min, "
                f"{left}, {_clock(elapsed)} elapsed")

    def _show(self) -> None:
        with self._lock:
            # written, not printed: in a flow with log_prints, print() to stderr goes to the
            # Prefect logger, which a command quiets
            self.stream.write(f"\r{self.line()}\033[K" if self.live else f"{self.line()}\n")
            self.stream.flush()
            self._shown, self._last = self.finished, time.monotonic()

    def _beats(self) -> None:
        interval = 1.0 if self.live or self.every_s <= 0 else self.every_s
        while not self._stop.wait(interval):
            if self.live or time.monotonic() - self._last >= interval:
                self._show()

    def done(self, good: bool) -> None:
        with self._lock:
            self.finished += 1
            self.good += good
        if not self.quiet and self._beat.is_alive() and (
                self.live or time.monotonic() - self._last >= self.every_s):
            self._show()

    def close(self) -> None:
        if not self._beat.is_alive():
            return
        self._stop.set()
        self._beat.join()
        if self.finished and self._shown != self.finished:
            self._show()
        if self.live and self._shown is not None:
            with self._lock:
                self.stream.write("\n")
                self.stream.flush()

    def __enter__(self) -> Ticker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Progress(Ticker):
    """A run's :class:`Ticker`, with its percentage in a Prefect progress artifact."""

    def __init__(self, total: int, run_id: str, stream: TextIO | None = None,
                 every_s: float = 5.0) -> None:
        from prefect.artifacts import create_progress_artifact

        super().__init__(total, stream, every_s)
        self._updated = time.monotonic()
        self.artifact = cast(UUID, create_progress_artifact(  # sync here: a flow's thread
            0.0, key="taskfactory-progress", description=f"candidates done, run {run_id}"))

    def done(self, good: bool) -> None:
        from prefect.artifacts import update_progress_artifact

        super().done(good)
        now = time.monotonic()
        if now - self._updated >= self.every_s or self.finished == self.total:
            self._updated = now
            update_progress_artifact(self.artifact, 100 * self.finished / self.total)
