"""Host side of the in-container command runner (``environments/runner``).

A ``RunnerChannel`` is one runner, as the sandbox user or as root, attached over a hijacked socket:
the container's own command (a sandbox's first runner; its death is told by the exit
frame its shell sends) or a ``docker exec -i`` of one (its death: the end of the stream).
A reader thread splits docker's multiplexed stream, cuts protocol frames out of stdout
and hands each response to the thread waiting on its id, so calls from several threads
share the channel and run concurrently.

Errors: ``RunnerStartError`` when no runner came up (the caller uses a plain docker exec);
``RunnerGone`` when the channel broke or the runner died with the call in flight, or gave
no answer within the call's backstop (then the channel is abandoned: its runner reads EOF,
KILLs its commands and exits); ``RunnerFileError`` for a file verb the runner refused.
``exec`` never raises ``RunnerGone``: it returns a failed ``ExecResult`` instead.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
import time
from typing import Any

import docker
import docker.errors

from environments.docker.exec_path import BACKSTOP_S, Hijacked, StreamDemux, attach, exit_code
from environments.runner import launch_argv, payload
from environments.runner.protocol import FrameReader, encode_frame
from environments.sandbox import TIMEOUT_EXIT_CODE, ExecResult, TailBuffer

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30  # until the hello; python3 starts in ~20 ms on an idle machine
SOCKET_TIMEOUT_S = 60  # one send of a request (the reader just retries on it)
FILE_TIMEOUT_S = 120  # backstop of one read or write request
TREE_TIMEOUT_S = 600  # backstop of one snapshot or restore
LOST_EXIT_CODE = 125  # a command whose runner died for another reason than a signal
RETRY_MAX_S = 30  # longest wait before trying again to start a runner


class RunnerStartError(Exception):
    """No runner answered; ``str()`` says why (with the runner's stderr, if any)."""


class RunnerGone(Exception):
    """The channel is dead; ``backstop`` is True when the runner stopped answering."""

    def __init__(self, reason: str, backstop: bool = False) -> None:
        super().__init__(reason)
        self.backstop = backstop


class RunnerFileError(Exception):
    """A read or write the runner refused; ``kind`` is one of ``protocol.ERRORS``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Call:
    __slots__ = ("done", "header", "blob")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.header: dict[str, Any] | None = None
        self.blob = b""


class RunnerChannel:
    """One runner in container ``container_id``: a ``docker exec`` of it, or with
    ``attached`` (the socket of the container's own stdio, see ``container_argv``) the
    container's command. ``reap_sessions`` are sessions of dead runners whose leftovers it
    KILLs first. DockerException and OSError from the engine propagate; RunnerStartError
    when no hello comes."""

    def __init__(self, api: docker.APIClient, container_id: str, user: str, frame_limit: int,
                 reap_sessions: list[int] | tuple[int, ...] = (),
                 attached: Hijacked | None = None) -> None:
        self._api = api
        self._lock, self._send_lock = threading.Lock(), threading.Lock()
        self._pending: dict[int, _Call] = {0: _Call()}
        self._ids = itertools.count(1)
        self._dead: str | None = None
        self._exit: int | None = None
        self.stderr = TailBuffer(4096)
        self.received = 0  # bytes read from the engine (output is capped in the container)
        self._frames = FrameReader(frame_limit)
        self.exec_id: str | None = None
        if attached is None:
            self.exec_id = api.exec_create(
                container_id, launch_argv(reap_sessions), stdin=True, stdout=True,
                stderr=True, user=user, workdir="/",
            )["Id"]  # fmt: skip
            attached = attach(api, self.exec_id)
        self._sock, self._close_sock, self._early = attached
        self._sock.settimeout(SOCKET_TIMEOUT_S)
        hello = self._pending[0]  # before the reader starts: it may fail every call at once
        threading.Thread(target=self._read_loop, name="tf-runner-reader", daemon=True).start()
        try:
            self._send(payload())
            header, _ = self._wait(hello, START_TIMEOUT_S)
            info = header["hello"]
            self.pid, self.sid = int(info["pid"]), info.get("sid")
        except (RunnerGone, OSError, KeyError, TypeError, ValueError) as e:
            self.close()
            raise RunnerStartError(f"{e}; runner stderr: {self.stderr.text()[-500:]!r}") from e

    @property
    def alive(self) -> bool:
        return self._dead is None

    # ---- verbs ---------------------------------------------------------------------------

    def exec(self, argv: list[str], timeout: float, workdir: str, env: dict[str, str] | None,
             stdin: bytes | None, cap: int) -> ExecResult:  # fmt: skip
        """Run one command (the ``Sandbox.exec`` contract). When the runner dies or stops
        answering meanwhile, the result is failed: exit 124 and ``timed_out`` after the
        backstop; the runner's exit code if a signal killed it (137: SIGKILL, e.g. the OOM
        killer); else 125. The command's output is lost then."""
        start = time.monotonic()
        req = {"op": "exec", "argv": list(argv), "cwd": workdir, "env": dict(env or {}),
               "timeout": float(timeout), "cap": cap, "stdin": stdin is not None}  # fmt: skip
        try:
            header, blob = self.request(req, stdin or b"", timeout + BACKSTOP_S)
            n_out, code = int(header["out"]), int(header["code"])
            timed_out, truncated = bool(header["timed_out"]), bool(header["truncated"])
        except (KeyError, TypeError, ValueError) as e:  # a runner that lost its mind
            self.abandon(f"malformed answer to exec: {e!r}")
            return self._lost(RunnerGone(f"malformed answer to exec: {e!r}"), start, timeout)
        except RunnerGone as e:
            return self._lost(e, start, timeout)
        out, err = blob[:n_out], blob[n_out:]
        return ExecResult(
            exit_code=code, stdout=out[-cap:].decode("utf-8", errors="replace"),
            stderr=err[-cap:].decode("utf-8", errors="replace"),
            duration_s=time.monotonic() - start, timed_out=timed_out,
            truncated=truncated or len(out) > cap or len(err) > cap,
        )  # fmt: skip

    def read(self, path: str, max_bytes: int) -> bytes:
        """Bytes of the regular file at absolute ``path``; RunnerFileError, RunnerGone."""
        self._frames.limit = max(self._frames.limit, max_bytes + 2**20)
        header, blob = self.request({"op": "read", "path": path, "max": max_bytes}, b"",
                                    FILE_TIMEOUT_S)  # fmt: skip
        _raise_file_error(header)
        return blob

    def write(self, files: dict[str, bytes]) -> None:
        """Write files at absolute paths (see ``runner.files.write_files``)."""
        listing = [[path, len(data)] for path, data in files.items()]
        header, _ = self.request({"op": "write", "files": listing}, b"".join(files.values()),
                                 FILE_TIMEOUT_S)  # fmt: skip
        _raise_file_error(header)

    def copy_tree(self, op: str, src: str, dst: str) -> None:
        """``op`` "snapshot" (copy ``src`` to the new ``dst``) or "restore" (make ``dst``
        a copy of ``src`` again); RunnerFileError, RunnerGone."""
        header, _ = self.request({"op": op, "src": src, "dst": dst}, b"", TREE_TIMEOUT_S)
        _raise_file_error(header)

    def reset(self, places: list[tuple[str, int | None]]) -> list[str]:
        """KILL the sandbox user's other processes and empty ``places`` (path, mode or
        None); returns what still differs from a fresh container (``runner.reset``).
        RunnerGone."""
        header, _ = self.request({"op": "reset", "places": [list(p) for p in places]}, b"",
                                 FILE_TIMEOUT_S)
        _raise_file_error(header)
        return [str(d) for d in header["dirty"]]

    def sweep(self, request: dict[str, Any]) -> None:
        """The root cleanup in this (root) runner's own process: ``request`` holds the
        arguments of ``runner.reset.sweep``.  RunnerFileError, RunnerGone."""
        header, _ = self.request({"op": "sweep", **request}, b"", FILE_TIMEOUT_S)
        _raise_file_error(header)

    # ---- channel -------------------------------------------------------------------------
    def request(self, header: dict[str, Any], blob: bytes, wait_s: float
                ) -> tuple[dict[str, Any], bytes]:  # fmt: skip
        """Send one request and wait up to ``wait_s`` for its answer; ``RunnerGone``."""
        call = _Call()
        with self._lock:
            if self._dead is not None:
                raise RunnerGone(self._dead)
            rid = next(self._ids)
            self._pending[rid] = call
        try:
            self._send(encode_frame({**header, "id": rid}, blob))
        except OSError as e:
            self.abandon(f"cannot send to the runner: {e}")
        return self._wait(call, wait_s)

    def abandon(self, reason: str) -> None:
        """Mark the channel dead, fail the calls in flight and close the socket."""
        with self._lock:
            if self._dead is None:
                self._dead = reason
            calls = list(self._pending.values())
            self._pending.clear()
        for call in calls:
            call.done.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._close_sock()

    def close(self) -> None:
        self.abandon("the runner channel was closed")

    def exit_code(self) -> int | None:
        """The runner's exit code once it has exited (None if unknown or still running)."""
        if self._exit is None and self.exec_id is not None:  # else: from its exit frame
            with contextlib.suppress(docker.errors.APIError):
                self._exit = exit_code(self._api, self.exec_id, wait_s=1)
        return self._exit

    def _send(self, data: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(data)

    def _wait(self, call: _Call, wait_s: float) -> tuple[dict[str, Any], bytes]:
        if not call.done.wait(wait_s):
            self.abandon(f"the runner gave no answer within {wait_s:.0f} s")
            raise RunnerGone(f"the runner gave no answer within {wait_s:.0f} s", backstop=True)
        if call.header is None:
            raise RunnerGone(self._dead or "the runner channel is dead")
        return call.header, call.blob

    def _read_loop(self) -> None:
        demux, reason = StreamDemux(), "the runner exited"
        try:
            while self._dead is None and self._exit is None:
                chunk, self._early = self._early, b""  # what came with the HTTP headers
                try:
                    chunk = chunk or self._sock.recv(1 << 16)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                self.received += len(chunk)
                for stream, data in demux.feed(chunk):
                    if stream != 1:
                        self.stderr.write(data)
                        continue
                    for header, blob in self._frames.feed(data):
                        if "exit" in header:  # the container's runner exited: the last frame
                            self._exit = int(header["exit"])
                        self._deliver(header, blob)
        except Exception as e:  # a broken socket or a malformed frame
            reason = f"the runner channel broke: {e!r}"
        self.abandon(reason)

    def _deliver(self, header: dict[str, Any], blob: bytes) -> None:
        with self._lock:
            call = self._pending.pop(header.get("id"), None)  # type: ignore[arg-type]
        if call is not None:  # else: an answer nobody waits for any more
            call.header, call.blob = header, blob
            call.done.set()

    def _lost(self, e: RunnerGone, start: float, timeout: float) -> ExecResult:
        duration = time.monotonic() - start
        if e.backstop:
            code = TIMEOUT_EXIT_CODE
        else:
            runner_exit = self.exit_code()
            code = runner_exit if runner_exit is not None and runner_exit > 128 else LOST_EXIT_CODE
        why = (f"tf-runner: the sandbox's command runner was lost while the command ran "
               f"({e}); its outcome is unknown\n{self.stderr.text()[-1000:]}")  # fmt: skip
        return ExecResult(exit_code=code, stdout="", stderr=why, duration_s=duration,
                          timed_out=e.backstop and duration >= timeout, truncated=False)


def _raise_file_error(header: dict[str, Any]) -> None:
    if "error" in header:
        raise RunnerFileError(str(header["error"]), str(header.get("message", "")))


class RunnerSlot:
    """The runner of one sandbox: started on first use (the container's own, on
    ``attached``, else a ``docker exec`` of one), replaced once it died (the new one first
    KILLs what the dead one left running), and after a failed start not tried again for a
    backoff that doubles from 0.5 s to ``RETRY_MAX_S``. Thread-safe."""

    def __init__(self, api: docker.APIClient, container_id: str, user: str, frame_limit: int,
                 name: str,
                 attached: Hijacked | None = None) -> None:
        self._args = (api, container_id, user, frame_limit)
        self._attached = attached
        self.name = name
        self._runner: RunnerChannel | None = None
        self._lock = threading.Lock()
        self._dead_sessions: list[int] = []
        self._retry_at, self._backoff = 0.0, 0.0
        self._closed = False

    def get(self) -> RunnerChannel | None:
        """The live runner, or None while none can be started (or after ``close``)."""
        runner = self._runner
        if runner is not None and runner.alive:
            return runner
        with self._lock:
            runner = self._runner
            if runner is not None and runner.alive:
                return runner
            if runner is not None:  # it died: what it ran may linger in its session
                self._runner = None
                if type(runner.sid) is int and runner.sid > 1:
                    self._dead_sessions.append(runner.sid)
            if self._closed or time.monotonic() < self._retry_at:
                return None
            attached, self._attached = self._attached, None
            try:
                runner = RunnerChannel(*self._args, reap_sessions=self._dead_sessions,
                                       attached=attached)
            except (RunnerStartError, docker.errors.DockerException, OSError) as e:
                self._backoff = min(max(2 * self._backoff, 0.5), RETRY_MAX_S)
                self._retry_at = time.monotonic() + self._backoff
                log.warning("sandbox %s: no command runner (%s); docker exec for %.1f s",
                            self.name, e, self._backoff)  # fmt: skip
                return None
            self._dead_sessions.clear()
            self._backoff = 0.0
            self._runner = runner
            return runner

    def current(self) -> RunnerChannel | None:
        """The live runner, if one is running now (none is started)."""
        runner = self._runner
        return runner if runner is not None and runner.alive else None

    def close(self) -> None:
        """Close the runner and start no other. Idempotent."""
        with self._lock:
            self._closed = True
            runner, self._runner = self._runner, None
            attached, self._attached = self._attached, None
        if runner is not None:
            runner.close()
        if attached is not None:
            attached[1]()
