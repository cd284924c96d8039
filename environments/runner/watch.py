"""The pipes of one running command: its stdin fed, the tails of its stdout and stderr kept.

Standard library only (see ``agent``); typing is not imported at run time.
"""

from __future__ import annotations

import math
import os
import select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Protocol

    class Process(Protocol):
        """What the runner supervises: a ``subprocess.Popen`` or a ``pyfork.Forked``."""

        pid: int

        @property
        def stdin(self) -> IO[bytes] | None: ...
        @property
        def stdout(self) -> IO[bytes] | None: ...
        @property
        def stderr(self) -> IO[bytes] | None: ...
        def wait(self) -> int: ...

CHUNK = 1 << 16  # bytes per read or write on a pipe


class Tail:
    """The last ``cap`` bytes of a stream, and how many bytes it carried."""

    def __init__(self, cap: int) -> None:
        self.cap, self.total, self.buf = max(0, cap), 0, bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > 2 * self.cap + CHUNK:
            del self.buf[: len(self.buf) - self.cap]

    def value(self) -> bytes:
        return bytes(self.buf[len(self.buf) - self.cap :]) if self.cap else b""


class Watch:
    """Polls a command's pipes (and its pidfd, when there is one): ``pump`` moves what is
    ready, ``exited`` stops feeding stdin, ``close`` closes every descriptor."""

    def __init__(self, proc: Process, stdin: bytes, cap: int, pidfd: int | None) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc, self.stdin, self.pidfd, self.poller = proc, stdin, pidfd, select.poll()
        self.out, self.err = Tail(cap), Tail(cap)
        self.tails = {proc.stdout.fileno(): self.out, proc.stderr.fileno(): self.err}
        self.reading = set(self.tails)
        for fd in self.tails:
            self.poller.register(fd, select.POLLIN)
        self.in_fd, self.sent = (proc.stdin.fileno() if proc.stdin else None), 0
        if self.in_fd is not None:
            os.set_blocking(self.in_fd, False)
            self.poller.register(self.in_fd, select.POLLOUT)
        if pidfd is not None:
            self.poller.register(pidfd, select.POLLIN)

    def pump(self, wait_s: float) -> None:
        """Wait up to ``wait_s`` for a pipe (or the pidfd) and move what is ready."""
        for fd, _ in self.poller.poll(max(0, math.ceil(wait_s * 1000))):
            if fd in self.reading:
                data = os.read(fd, CHUNK)
                if data:
                    self.tails[fd].add(data)
                else:
                    self.reading.discard(fd)
                    self.poller.unregister(fd)
            elif fd == self.in_fd:
                try:
                    self.sent += os.write(fd, memoryview(self.stdin)[self.sent : self.sent + CHUNK])
                except BlockingIOError:
                    continue
                except OSError:  # the command closed its stdin
                    self.sent = len(self.stdin)
                if self.sent >= len(self.stdin):
                    self._stop_feeding()

    def exited(self) -> None:
        """The command exited: the pidfd and stdin are done with (output is still read)."""
        if self.pidfd is not None:
            self.poller.unregister(self.pidfd)
        self._stop_feeding()

    def _stop_feeding(self) -> None:
        if self.in_fd is not None and self.proc.stdin is not None:
            self.poller.unregister(self.in_fd)
            self.proc.stdin.close()
            self.in_fd = None

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr, self.pidfd):
            if f is not None:
                os.close(f) if isinstance(f, int) else f.close()
