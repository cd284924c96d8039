"""Progress of a run: a live line in the terminal and a Prefect progress artifact.

The line (on stderr) says how many candidates are done, accepted and rejected, the rate
of accepted tasks per minute and the time left at that pace.  On a terminal it is
rewritten in place; otherwise (a log file, CI) a line is printed every ``every_s``
seconds.  The Prefect artifact's percentage is updated at most every ``every_s``
seconds, so long runs cost few API calls.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO, cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts outcomes as they arrive; call :meth:`done` once for every candidate."""

    def __init__(self, total: int, run_id: str, stream: TextIO | None = None,
                 every_s: float = 5.0) -> None:
        self.total, self.every_s = total, every_s
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.finished = self.accepted = 0
        self.started = self._shown = time.monotonic()
        self.artifact = cast(UUID, create_progress_artifact(  # sync here: a flow's thread
            0.0, key="taskfactory-progress", description=f"candidates done, run {run_id}"))

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.accepted / elapsed * 60
        left = (self.total - self.finished) * elapsed / self.finished if self.finished else 0
        return (f"{self.finished}/{self.total} done, {self.accepted} accepted, "
                f"{self.finished - self.accepted} rejected, {rate:.0f} accepted/min, "
                f"ETA {_clock(left)}")

    def done(self, accepted: bool) -> None:
        self.finished += 1
        self.accepted += accepted
        now = time.monotonic()
        if self.live:
            self.stream.write("\r" + self.line() + "\033[K")
            self.stream.flush()
        if now - self._shown >= self.every_s or self.finished == self.total:
            self._shown = now
            if not self.live:
                print(self.line(), file=self.stream, flush=True)
            update_progress_artifact(self.artifact, 100 * self.finished / self.total)

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
