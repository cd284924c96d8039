"""The engine's own verbs for a sandbox container: one ``docker exec`` per command, and the
archive calls (``put_archive`` / ``get_archive``) for files.

This is the ``exec_via="docker-exec"`` path, and the fallback of the runner path. Each
command runs under coreutils ``timeout -k 2 <t>s`` (its own process group; TERM, then
KILL 2 s later) inside a tiny ``sh`` wrapper that also KILLs what the command left in its
group when it exits, and after a timeout what it left anywhere else (the runner's
``procs.kill_strays``, run by ``python3``). stdin and docker's multiplexed output stream
go over the raw hijacked socket, so stdin works and output stays bounded (the tail is
kept).

Functions here raise ``docker.errors.APIError`` (and ``NotFound``) as the engine does;
``environments.docker.backend`` turns them into ``SandboxError`` / ``SandboxClosedError``.
"""

from __future__ import annotations

import contextlib
import io
import socket
import struct
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors

from environments.runner import procs
from environments.runner.pyfork import python_stdin_args
from environments.sandbox import TIMEOUT_EXIT_CODE, ExecResult, SandboxError, TailBuffer

BACKSTOP_S = 10  # host-side grace on top of the in-container timeout
_MODE_DIR, _MODE_SYMLINK = 1 << 31, 1 << 27  # Go os.FileMode bits in the archive stat
# Run argv under `timeout` (own process group; TERM, then KILL 2 s later, on timeout), then
# SIGKILL whatever is left in that group (background children, fork bombs); after a
# timeout also what it started elsewhere (setsid, double forks), by the TF_EXEC_ID=$m every
# process of the command inherits, and by start time (boot clock $u). fd 3 carries stdin
# past the shell rule "background jobs read /dev/null".
_EXEC_SH = (
    't=$1; m=$2; k=$3; shift 3; read u _ </proc/uptime; exec 3<&0; '
    'TF_EXEC_ID=$m timeout -k 2 "$t" "$@" <&3 3<&- & p=$!; exec 3<&-; '
    'wait "$p"; r=$?; kill -KILL -"$p" 2>/dev/null; '
    'case $r in 124|137) python3 -I -S -c "$k" "$m" "$u";; esac; exit "$r"'
)
_STRAYS_PY = Path(procs.__file__).read_text() + (
    "\nimport sys\nkill_strays(sys.argv[1], float(sys.argv[2]) * os.sysconf('SC_CLK_TCK'))\n")


class StreamDemux:
    """Splits docker's multiplexed exec stream (frames: 8-byte header = stream type, 3 pad
    bytes, big-endian length; then the payload) into ``(stream, bytes)`` pieces."""

    def __init__(self) -> None:
        self._header, self._stream, self._left = bytearray(), 0, 0

    def feed(self, chunk: bytes) -> Iterator[tuple[int, bytes]]:
        i, n = 0, len(chunk)
        while i < n:
            if self._left == 0:
                need = 8 - len(self._header)
                self._header += chunk[i : i + need]
                i += need
                if len(self._header) == 8:
                    self._stream, self._left = struct.unpack(">BxxxL", bytes(self._header))
                    self._header.clear()
                continue
            take = min(self._left, n - i)
            yield self._stream, chunk[i : i + take]
            i, self._left = i + take, self._left - take


Hijacked = tuple[socket.socket, Callable[[], None], bytes]
"""A hijacked connection's real socket, the closer for all of it, and the stream bytes
the HTTP client had already read past the response headers (they come first)."""


def attach(api: docker.APIClient, exec_id: str) -> Hijacked:
    """Start exec ``exec_id`` on a hijacked socket; returns the socket and its closer."""
    return hijacked(api.exec_start(exec_id, socket=True))


def attach_container(api: docker.APIClient, container_id: str) -> Hijacked:
    """The hijacked socket of the container's own stdin, stdout and stderr (attach before
    ``start`` so no output is missed), and its closer."""
    params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
    return hijacked(api.attach_socket(container_id, params=params))


def hijacked(raw: Any) -> Hijacked:
    """The real socket under a docker-py hijacked response, a closer for all of it, and
    the bytes its HTTP client buffered beyond the headers: output that arrived with them
    (attaching to a container that already writes) would be lost to a socket reader."""
    sock: socket.socket = getattr(raw, "_sock", raw)  # a SocketIO wraps the real socket
    response = getattr(raw, "_response", None)  # docker-py keeps the HTTP response here

    def close() -> None:
        for obj in (sock, raw, response):
            with contextlib.suppress(Exception):
                if obj is not None:
                    obj.close()

    return sock, close, _buffered(sock, response)


def _buffered(sock: socket.socket, response: Any) -> bytes:
    """What the response's buffered reader holds, without waiting for more."""
    reader = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    if reader is None or not hasattr(reader, "peek"):
        return b""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # peek reads the socket only when nothing is buffered
    try:
        return bytes(reader.peek(1 << 16))
    except (OSError, ValueError):
        return b""
    finally:
        sock.settimeout(timeout)


def exit_code(api: docker.APIClient, exec_id: str, wait_s: float = 5) -> int | None:
    """The exit code of a finished exec; None if it still runs after ``wait_s``."""
    delay, deadline = 0.005, time.monotonic() + wait_s
    while True:  # the exit code can lag the end of the stream slightly
        info = api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        if time.monotonic() > deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _pump(sock: socket.socket, early: bytes, deadline: float, out: TailBuffer,
          err: TailBuffer) -> bool:
    """Read the exec stream (``early`` first) into the tail buffers until EOF. Returns
    False if ``deadline`` passed first (host-side backstop)."""
    demux = StreamDemux()
    for stream, data in demux.feed(early):
        (out if stream == 1 else err).write(data)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            return True
        if not chunk:
            return True
        for stream, data in demux.feed(chunk):
            (out if stream == 1 else err).write(data)


def _feed(sock: socket.socket, data: bytes) -> None:
    """Write stdin bytes to the hijacked socket, then half-close it (EOF for the process)."""
    with contextlib.suppress(OSError):  # process exited early: like a broken pipe
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)


def exec_once(api: docker.APIClient, container_id: str, user: str, cap: int, argv: list[str],
              timeout: float, workdir: str, env: dict[str, str] | None,
              stdin: bytes | None) -> ExecResult:  # fmt: skip
    """Run one command with its own ``docker exec`` (see the module docstring).  A
    ``python3 -`` script runs as in the runner (``pyfork``): with ``-I -S``, so no ``''``
    (the workdir, which the sandbox user writes) on ``sys.path`` shadows a module it
    imports, privileged or not."""
    script_args = python_stdin_args(argv, stdin is not None)
    if script_args is not None:
        argv = ["python3", "-I", "-S", "-", *script_args]
    cmd = ["sh", "-c", _EXEC_SH, "tf-exec", f"{float(timeout):.3f}s", uuid.uuid4().hex[:16],
           _STRAYS_PY, *argv]
    start = time.monotonic()
    exec_id = api.exec_create(
        container_id, cmd, stdout=True, stderr=True, stdin=stdin is not None,
        workdir=workdir, environment=dict(env) if env else None, user=user,
    )["Id"]  # fmt: skip
    sock, close, early = attach(api, exec_id)
    out, err = TailBuffer(cap), TailBuffer(cap)
    if stdin is not None:
        threading.Thread(target=_feed, args=(sock, stdin), daemon=True).start()
    try:
        finished = _pump(sock, early, start + timeout + BACKSTOP_S, out, err)
    finally:
        close()
    code = exit_code(api, exec_id) if finished else None
    duration = time.monotonic() - start
    if code is None:  # host-side backstop hit (or the engine lost track of the exec)
        code = TIMEOUT_EXIT_CODE if not finished else -1
    return ExecResult(
        exit_code=code, stdout=out.text(), stderr=err.text(), duration_s=duration,
        timed_out=code in (124, 137) and duration >= timeout,
        truncated=out.truncated or err.truncated,
    )  # fmt: skip


def file_owner(user: str) -> tuple[int, int]:
    """uid/gid owning written files, from a docker ``user`` string like "1000:1000"."""
    parts = user.split(":")
    if parts[0] in ("root", "0"):
        return 0, int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    uid = int(parts[0]) if parts[0].isdigit() else 1000
    return uid, int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else uid


def _tar(files: dict[str, bytes], uid: int, gid: int) -> bytes:
    """In-memory tar of ``files`` (relative paths) plus their parent dirs, owned by uid/gid."""
    bio, now, seen = io.BytesIO(), int(time.time()), set()

    def entry(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.size, ti.uid, ti.gid, ti.mtime = kind, mode, size, uid, gid, now
        return ti

    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for rel, data in files.items():
            parts = rel.split("/")
            for d in ("/".join(parts[:i]) for i in range(1, len(parts))):
                if d not in seen:
                    seen.add(d)
                    tf.addfile(entry(d, tarfile.DIRTYPE, 0o755))
            tf.addfile(entry(rel, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    return bio.getvalue()


def put_files(api: docker.APIClient, container_id: str, root: str, files: dict[str, bytes],
              user: str) -> bool:  # fmt: skip
    """Extract ``files`` (paths relative to ``root``, which must exist) in one archive."""
    return bool(api.put_archive(container_id, root, _tar(files, *file_owner(user))))


def get_file(api: docker.APIClient, container_id: str, path: str, max_bytes: int,
             resolve: Callable[[str], str], where: str) -> bytes:  # fmt: skip
    """A regular file's bytes via ``get_archive``, following symlinks (a link target is
    passed through ``resolve``). ``NotFound`` when missing; ``SandboxError`` when it is a
    directory, larger than ``max_bytes``, not a regular file, or a symlink loop."""
    for _ in range(20):  # follow symlinks
        stream, stat = api.get_archive(container_id, path, chunk_size=None)
        mode, size = int(stat.get("mode", 0)), int(stat.get("size", 0))
        if mode & _MODE_SYMLINK and stat.get("linkTarget"):
            stream.close()  # never started: dropping it releases the response
            path = resolve(stat["linkTarget"])
            continue
        if mode & _MODE_DIR or size > max_bytes:
            stream.close()
            why = "is a directory" if mode & _MODE_DIR else f"{size} bytes > {max_bytes}"
            raise SandboxError(f"cannot read {path} in {where}: {why}")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r") as tf:
            member = tf.next()
            f = tf.extractfile(member) if member is not None and member.isfile() else None
            if f is None:
                raise SandboxError(f"{path} in {where} is not a regular file")
            return f.read()
    raise SandboxError(f"too many levels of symlinks reading {path!r}")
