"""Docker backend: one hardened, long-lived container per sandbox (docker SDK, real engine).

Each container runs ``sleep infinity`` under docker-init with no network, all capabilities
dropped, no-new-privileges, a pids limit, memory == memory+swap, a CPU quota and uid 1000.
Commands run through ``docker exec`` wrapped in coreutils ``timeout -k 2 <t>s`` (which
kills the command's whole process group on timeout) inside a tiny ``sh`` wrapper that also
kills what the command left behind in its group when it exits. stdin and the multiplexed
output stream go over the raw hijacked socket, so stdin works and output stays bounded.
Containers carry the labels ``taskfactory.run`` and ``taskfactory.owner_pid`` for ``reap``.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import re
import socket
import struct
import tarfile
import threading
import time
import uuid

import docker
import docker.errors
from docker.types import LogConfig

from environments.config import DockerConfig
from environments.sandbox import (
    DEFAULT_READ_MAX,
    TIMEOUT_EXIT_CODE,
    ExecResult,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxProvider,
    SandboxUnavailableError,
    Snapshot,
    TailBuffer,
)

RUN_LABEL = "taskfactory.run"
OWNER_LABEL = "taskfactory.owner_pid"
SNAP_ROOT = "/tmp/.tf-snap"
API_TIMEOUT = 60
BACKSTOP_S = 10  # host-side grace on top of the in-container timeout
_MODE_DIR, _MODE_SYMLINK = 1 << 31, 1 << 27  # Go os.FileMode bits in the archive stat
# Run argv under `timeout` (own process group; TERM, then KILL 2 s later, on timeout), then
# SIGKILL whatever is left in that group (background children, fork bombs). fd 3 carries
# stdin past the shell rule "background jobs read /dev/null".
_EXEC_SH = (
    't=$1; shift; exec 3<&0; timeout -k 2 "$t" "$@" <&3 3<&- & p=$!; exec 3<&-; '
    'wait "$p"; r=$?; kill -KILL -"$p" 2>/dev/null; exit "$r"'
)
_SNAPSHOT_SH = 'set -e; umask 077; mkdir -p "$1"; cp -a "$2/." "$1/"'
_RESTORE_SH = (
    'set -e; test -d "$1" || { echo "snapshot $1 is gone" >&2; exit 3; }; '
    'chmod -R u+w "$2" 2>/dev/null || true; find "$2" -mindepth 1 -delete; cp -a "$1/." "$2/"'
)


def _ids(user: str) -> tuple[int, int]:
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


def _pump(sock: socket.socket, deadline: float, out: TailBuffer, err: TailBuffer) -> bool:
    """Read docker's multiplexed stream (frames: 8-byte header = stream type, 3 pad bytes,
    big-endian length; then payload) into the tail buffers until EOF. Returns False if
    ``deadline`` passed first (host-side backstop)."""
    header, stream, left = bytearray(), 0, 0
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
        i, n = 0, len(chunk)
        while i < n:
            if left == 0:
                need = 8 - len(header)
                header += chunk[i : i + need]
                i += need
                if len(header) == 8:
                    stream, left = struct.unpack(">BxxxL", bytes(header))
                    header.clear()
                continue
            take = min(left, n - i)
            (out if stream == 1 else err).write(chunk[i : i + take])
            i, left = i + take, left - take


def _feed(sock: socket.socket, data: bytes) -> None:
    """Write stdin bytes to the hijacked socket, then half-close it (EOF for the process)."""
    with contextlib.suppress(OSError):  # process exited early: like a broken pipe
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)


def _remove(api: docker.APIClient, container_id: str) -> bool:
    """Force-remove a container; False when it was already gone."""
    try:
        api.remove_container(container_id, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as e:
        if e.status_code == 409 and "already in progress" in str(e):
            return False
        raise SandboxError(f"cannot remove container {container_id[:12]}: {e}") from e


class DockerSandbox(Sandbox):
    """A running container; ``workdir`` is the configured one ("/workspace")."""

    def __init__(
        self, provider: DockerProvider, container_id: str, name: str, labels: dict[str, str]
    ) -> None:
        super().__init__()
        self._provider, self._api, self._cfg = provider, provider.client.api, provider.config
        self.container_id, self.name, self.labels = container_id, name, labels
        self.workdir = provider.config.workdir
        self._snaps: set[str] = set()

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _api_error(self, e: Exception, what: str) -> SandboxError:
        if self._closed:
            return SandboxClosedError(f"sandbox {self.name} is closed")
        return SandboxError(f"{what} failed in sandbox {self.name}: {e}")

    def exec(self, argv, *, timeout=30.0, workdir=None, env=None, stdin=None) -> ExecResult:
        self._check_open()
        if not argv or timeout <= 0:
            raise ValueError("argv must be non-empty and timeout positive")
        cmd = ["sh", "-c", _EXEC_SH, "tf-exec", f"{float(timeout):.3f}s", *argv]
        wd = self._abs(workdir) if workdir else self.workdir
        start = time.monotonic()
        try:
            exec_id = self._api.exec_create(
                self.container_id, cmd, stdout=True, stderr=True, stdin=stdin is not None,
                workdir=wd, environment=dict(env) if env else None, user=self._cfg.user,
            )["Id"]  # fmt: skip
            raw = self._api.exec_start(exec_id, socket=True)
        except docker.errors.APIError as e:
            raise self._api_error(e, "exec") from e
        sock: socket.socket = getattr(raw, "_sock", raw)  # a SocketIO wraps the real socket
        out, err = TailBuffer(self._cfg.output_cap_bytes), TailBuffer(self._cfg.output_cap_bytes)
        if stdin is not None:
            threading.Thread(target=_feed, args=(sock, stdin), daemon=True).start()
        try:
            finished = _pump(sock, start + timeout + BACKSTOP_S, out, err)
        finally:
            response = getattr(raw, "_response", None)  # docker-py keeps the HTTP response here
            for obj in (sock, raw, response):
                with contextlib.suppress(Exception):
                    if obj is not None:
                        obj.close()
        if self._closed:
            raise SandboxClosedError(f"sandbox {self.name} was closed while the command ran")
        code = self._exit_code(exec_id) if finished else None
        duration = time.monotonic() - start
        if code is None:  # host-side backstop hit (or the engine lost track of the exec)
            code = TIMEOUT_EXIT_CODE if not finished else -1
        return ExecResult(
            exit_code=code, stdout=out.text(), stderr=err.text(), duration_s=duration,
            timed_out=code in (124, 137) and duration >= timeout,
            truncated=out.truncated or err.truncated,
        )  # fmt: skip

    def _exit_code(self, exec_id: str) -> int | None:
        delay, deadline = 0.005, time.monotonic() + 5
        while True:  # the exit code can lag the end of the stream slightly
            try:
                info = self._api.exec_inspect(exec_id)
            except docker.errors.APIError as e:
                raise self._api_error(e, "exec_inspect") from e
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            if time.monotonic() > deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def write_files(self, files: dict[str, bytes]) -> None:
        """Files under workdir go in one tar (with parent dirs, owned by the sandbox user);
        absolute paths elsewhere get ``mkdir -p`` as the sandbox user, then one tar per dir."""
        self._check_open()
        uid, gid = _ids(self._cfg.user)
        groups: dict[str, dict[str, bytes]] = {}
        for path, data in files.items():
            p = self._abs(path)
            rel = posixpath.relpath(p, self.workdir)
            if rel == ".":
                raise SandboxError(f"cannot write a file at the workdir itself ({path!r})")
            if rel == ".." or rel.startswith("../"):
                groups.setdefault(posixpath.dirname(p), {})[posixpath.basename(p)] = bytes(data)
            else:
                groups.setdefault(self.workdir, {})[rel] = bytes(data)
        for root, group in groups.items():
            if root != self.workdir:
                res = self.exec(["mkdir", "-p", root], timeout=30)
                if res.exit_code != 0:
                    raise SandboxError(f"cannot create {root} in {self.name}: {res.stderr}")
            try:
                ok = self._api.put_archive(self.container_id, root, _tar(group, uid, gid))
            except docker.errors.APIError as e:
                raise self._api_error(e, "write_files") from e
            if not ok:
                raise SandboxError(f"put_archive to {root} failed in sandbox {self.name}")

    def read_file(self, path: str, max_bytes: int = DEFAULT_READ_MAX) -> bytes:
        self._check_open()
        p = self._abs(path)
        for _ in range(20):  # follow symlinks
            try:
                stream, stat = self._api.get_archive(self.container_id, p, chunk_size=None)
            except docker.errors.NotFound as e:
                if self._closed:
                    raise SandboxClosedError(f"sandbox {self.name} is closed") from e
                raise FileNotFoundError(f"{p} not found in sandbox {self.name}") from e
            except docker.errors.APIError as e:
                raise self._api_error(e, "read_file") from e
            mode, size = int(stat.get("mode", 0)), int(stat.get("size", 0))
            if mode & _MODE_SYMLINK and stat.get("linkTarget"):
                stream.close()  # never started: dropping it releases the response
                p = self._abs(stat["linkTarget"])
                continue
            if mode & _MODE_DIR or size > max_bytes:
                stream.close()
                why = "is a directory" if mode & _MODE_DIR else f"{size} bytes > {max_bytes}"
                raise SandboxError(f"cannot read {p} in sandbox {self.name}: {why}")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r") as tf:
                member = tf.next()
                f = tf.extractfile(member) if member is not None and member.isfile() else None
                if f is None:
                    raise SandboxError(f"{p} in sandbox {self.name} is not a regular file")
                return f.read()
        raise SandboxError(f"too many levels of symlinks reading {path!r}")

    def snapshot(self) -> Snapshot:
        self._check_open()
        sid = uuid.uuid4().hex[:16]
        argv = ["sh", "-c", _SNAPSHOT_SH, "snap", f"{SNAP_ROOT}/{sid}", self.workdir]
        res = self.exec(argv, timeout=600)
        if not res.ok:
            raise SandboxError(f"snapshot failed in sandbox {self.name}: {res.stderr[-2000:]}")
        self._snaps.add(sid)
        return Snapshot(id=sid)

    def restore(self, snap: Snapshot) -> None:
        self._check_open()
        if snap.id not in self._snaps:
            raise SandboxError(f"snapshot {snap.id!r} does not belong to sandbox {self.name}")
        argv = ["sh", "-c", _RESTORE_SH, "restore", f"{SNAP_ROOT}/{snap.id}", self.workdir]
        res = self.exec(argv, timeout=600)
        if not res.ok:
            raise SandboxError(f"restore failed in sandbox {self.name}: {res.stderr[-2000:]}")

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._provider._forget(self)
        _remove(self._api, self.container_id)


class DockerProvider(SandboxProvider):
    """Opens DockerSandbox containers for one run (one docker client, shared by threads).
    Raises SandboxUnavailableError when no daemon answers."""

    def __init__(self, config: DockerConfig, run_id: str) -> None:
        super().__init__(run_id)
        self.config = config
        try:
            self.client = docker.from_env(timeout=API_TIMEOUT)
            self.client.ping()
        except docker.errors.DockerException as e:
            raise SandboxUnavailableError(
                f"no Docker daemon answers ({e}); start one with "
                "`bash environments/engine/ensure-docker.sh`"
            ) from e

    def open(self, *, labels: dict[str, str] | None = None) -> DockerSandbox:
        self._check_open()
        cfg = self.config
        # our labels win over caller labels: reap depends on them
        all_labels = {**(labels or {}), RUN_LABEL: self.run_id, OWNER_LABEL: str(os.getpid())}
        name = f"tf-{re.sub(r'[^a-zA-Z0-9_.-]', '-', self.run_id)[:40]}-{uuid.uuid4().hex[:10]}"
        try:  # create + start (not containers.run): a missing image must not trigger a pull
            container = self.client.containers.create(
                cfg.image, command=["sleep", "infinity"], name=name, init=cfg.init,
                network_mode=cfg.network_mode, cap_drop=cfg.cap_drop,
                security_opt=cfg.security_opt, pids_limit=cfg.pids_limit,
                mem_limit=f"{cfg.memory_mb}m", memswap_limit=f"{cfg.memory_mb}m",
                nano_cpus=int(cfg.cpus * 1e9), user=cfg.user, working_dir=cfg.workdir,
                labels=all_labels, log_config=LogConfig(type="none"), auto_remove=False,
            )  # fmt: skip
        except docker.errors.ImageNotFound as e:
            raise SandboxUnavailableError(
                f"base image {cfg.image} is missing; build it with `make image`"
            ) from e
        except docker.errors.APIError as e:
            raise SandboxError(f"cannot create a sandbox container from {cfg.image}: {e}") from e
        sb = DockerSandbox(self, container.id, name, all_labels)
        try:
            container.start()
        except BaseException as e:
            _remove(self.client.api, container.id)
            if isinstance(e, docker.errors.APIError):
                raise SandboxError(f"cannot start sandbox container {name}: {e}") from e
            raise
        if not self._register(sb):  # the provider was closed while we created it
            sb.close()
            raise SandboxClosedError(f"provider for run {self.run_id} was closed")
        return sb

    def reap(self, run_id: str | None = None) -> int:
        """With ``run_id``: remove every container of that run. Without: remove every
        taskfactory container whose owner process no longer exists on this host (owner
        pids are host pids: don't reap(None) from inside another pid namespace)."""
        label = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
        try:
            found = self.client.api.containers(all=True, filters={"label": label})
        except docker.errors.APIError as e:
            raise SandboxError(f"cannot list sandbox containers: {e}") from e
        with self._lock:
            mine = {sb.container_id: sb for sb in self._open if isinstance(sb, DockerSandbox)}
        removed = 0
        for c in found:
            if run_id is None and not _owner_dead((c.get("Labels") or {}).get(OWNER_LABEL)):
                continue
            if c["Id"] in mine:
                mine[c["Id"]].close()
                removed += 1
            elif _remove(self.client.api, c["Id"]):
                removed += 1
        return removed


def _owner_dead(pid_label: str | None) -> bool:
    if not pid_label or not pid_label.isdigit():
        return False  # cannot tell: keep it
    try:
        os.kill(int(pid_label), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
