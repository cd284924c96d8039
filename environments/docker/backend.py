"""Docker backend: one hardened, long-lived container per sandbox (docker SDK, real engine).

Each container runs under docker-init with no network, every capability dropped but
``DockerConfig.admin_caps``, no-new-privileges, a pids limit, memory == memory+swap and
a CPU quota.  Its command is a root shell that runs the sandbox's first runner (below) as
the sandbox user (uid 1000), then ``sleep infinity``: commands run as the sandbox user,
which holds no capability, and cannot stop the container (``kill -9 -1`` ends the runner,
whose successor starts with ``docker exec``).  ``privileged`` commands (the verifier, a
service's start) go to a second runner, as root, started with ``docker exec`` on first use
and kept with the container; the verifier it runs learns the first runner's pid from
``TF_SANDBOX_PIDS`` (the sandbox's own machinery, which it must not stop).  After a
privileged command, the next ``restore`` and the reset KILL what the sandbox user left
running and empty the logs folder (``DockerConfig.logs_dir``), opened to every user again.
Containers carry the labels ``taskfactory.run`` and ``taskfactory.owner_pid`` for ``reap``.

With ``DockerConfig.reuse`` (the default), a closed sandbox's container is not removed
but reset by its runner (the container's own, or the one started after a command killed
it) and kept for the provider's next sandbox: every other process
of the sandbox user KILLed, every place it may write emptied (``mounts.reset_places``;
the root filesystem is read-only), and the container kept only when nothing a fresh one
would not have is left (``runner.reset``).  A new container costs the engine ~200 ms of
CPU, a reset a few ms.  The provider keeps at most ``MAX_IDLE`` such containers and
removes them when it closes; a reused container keeps its first sandbox's labels.

How verbs reach the container depends on ``DockerConfig.exec_via``:

- ``"runner"`` (default): one runner process per sandbox inside the container
  (``environments.runner``) serves ``exec``, ``write_files`` and ``read_file`` over a
  framed protocol, concurrently; snapshots and restores run in it too. The first runner
  is the container's own command (its stdio attached before the start, its hello awaited
  on first use), which saves the ``docker exec`` that would start it. If a runner dies (a
  ``kill`` by a command, the OOM killer), the command in flight gets a failed result and
  the next call starts a new runner with ``docker exec``, which first KILLs what the dead
  one left running. While no runner can be started, calls fall back to the path below
  (retried with a growing backoff). Files the sandbox user may not write or read go
  through the engine's archive calls.
- ``"docker-exec"``: one ``docker exec`` per command and the archive calls for files
  (``environments.docker.exec_path``).

Both keep the same contract (the conformance suite runs against each).
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
import uuid
from typing import TYPE_CHECKING, NamedTuple

import docker
import docker.errors
from docker.types import LogConfig

from environments.docker.exec_path import (
    Hijacked,
    attach_container,
    exec_once,
    get_file,
    put_files,
)
from environments.docker.faults import (
    ENGINE_ERRORS,
    EngineUnreachableError,
    as_infrastructure,
    removal_in_progress,
)
from environments.docker.mounts import SNAP_ROOT, reset_places, scratch_mounts
from environments.docker.runner_channel import (
    RunnerChannel,
    RunnerFileError,
    RunnerGone,
    RunnerSlot,
)
from environments.runner import container_argv, payload, sweep_argv
from environments.sandbox import (
    DEFAULT_READ_MAX,
    ExecResult,
    InfrastructureError,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxProvider,
    SandboxUnavailableError,
    Snapshot,
)

if TYPE_CHECKING:
    from environments.docker.config import DockerConfig

log = logging.getLogger(__name__)
POOL = logging.getLogger("environments.docker.pool")
"""One DEBUG record per sandbox opened, its ``pool`` attribute ``"reused"`` (a kept
container) or ``"new"``: the pool's hit rate (``benchmarks/throughput.py`` reads them)."""

RUN_LABEL = "taskfactory.run"
OWNER_LABEL = "taskfactory.owner_pid"
API_TIMEOUT = 60
SNAPSHOT_TIMEOUT_S = 600
MAX_IDLE = 8  # reset containers a provider keeps for its next sandboxes
ROOT = "0:0"
_SNAPSHOT_SH = 'set -e; umask 077; mkdir -p "$1"; cp -a "$2/." "$1/"'
SANDBOX_PIDS = "TF_SANDBOX_PIDS"
"""Environment variable of a privileged command: the pids of the sandbox's own processes
of the sandbox user (its command runner), comma-separated."""
_RESTORE_SH = (
    'set -e; test -d "$1" || { echo "snapshot $1 is gone" >&2; exit 3; }; '
    'chmod -R u+w "$2" 2>/dev/null || true; find "$2" -mindepth 1 -delete; cp -a "$1/." "$2/"'
)


def _remove(api: docker.APIClient, container_id: str) -> bool:
    """Force-remove a container; False when it was already gone.  InfrastructureError
    when the engine does not answer (the container is reaped later)."""
    try:
        api.remove_container(container_id, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except ENGINE_ERRORS as e:
        if removal_in_progress(e):
            return False
        what = f"cannot remove container {container_id[:12]}"
        raise as_infrastructure(e, what) or SandboxError(f"{what}: {e}") from e


class _Idle(NamedTuple):
    """A reset container waiting for its next sandbox."""

    container_id: str
    name: str
    labels: dict[str, str]
    runners: RunnerSlot
    admin: RunnerSlot


class DockerSandbox(Sandbox):
    """A running container; ``workdir`` is the configured one ("/workspace")."""

    def __init__(
        self, provider: DockerProvider, container_id: str, name: str, labels: dict[str, str],
        attached: Hijacked | None = None, runners: RunnerSlot | None = None,
        admin: RunnerSlot | None = None,
    ) -> None:
        super().__init__(provider)
        self._provider: DockerProvider = provider
        self._api, self._cfg = provider.client.api, provider.config
        self.container_id, self.name, self.labels = container_id, name, labels
        self.workdir = provider.config.workdir
        self.agent_user = self._cfg.user
        self.logs_dir = self._cfg.logs_dir or None
        self._snaps: set[str] = set()
        self._root_ran = False
        limit = max(2 * self._cfg.output_cap_bytes, DEFAULT_READ_MAX) + 2**20
        self._runners = runners or RunnerSlot(self._api, container_id, self._cfg.user, limit,
                                              name, attached)
        self._admin = admin or RunnerSlot(self._api, container_id, ROOT, limit,
                                          f"{name} (root)")

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    def _api_error(self, e: Exception, what: str, server_errors: bool = True) -> SandboxError:
        if self._closed:
            return SandboxClosedError(f"sandbox {self.name} is closed")
        return (as_infrastructure(e, f"{what} in sandbox {self.name}", server_errors)
                or SandboxError(f"{what} failed in sandbox {self.name}: {e}"))

    def _check_running(self, what: str) -> None:
        """InfrastructureError when the container is gone or stopped (an engine restart
        stops every container), or the engine does not answer."""
        try:
            state = self._api.inspect_container(self.container_id).get("State") or {}
        except ENGINE_ERRORS as e:
            raise self._api_error(e, what) from e
        if not state.get("Running") and not self._closed:
            raise InfrastructureError(
                f"{what} in sandbox {self.name}: its container stopped "
                f"({state.get('Status')}, exit code {state.get('ExitCode')})")

    def _closed_meanwhile(self) -> SandboxClosedError:
        return SandboxClosedError(f"sandbox {self.name} was closed while the call ran")

    def _channel(self, privileged: bool = False) -> RunnerChannel | None:
        """The runner (the root one when ``privileged``), or None for plain docker exec
        (configured, or no runner right now)."""
        if self._cfg.exec_via != "runner":
            return None
        return (self._admin if privileged else self._runners).get()

    def _exec(self, argv: list[str], timeout: float, workdir: str | None,
              env: dict[str, str] | None, stdin: bytes | None,
              privileged: bool = False) -> ExecResult:
        wd = self._abs(workdir) if workdir else self.workdir
        cap = self._cfg.output_cap_bytes
        user = ROOT if privileged else self._cfg.user
        if privileged:
            own = self._runners.current()
            env = {**(env or {}), SANDBOX_PIDS: str(own.pid) if own is not None else ""}
            self._root_ran = True
        runner = self._channel(privileged)
        if runner is not None:
            result = runner.exec(argv, timeout, wd, env, stdin, cap)
            if not runner.alive and not self._closed:  # killed by the command, or the engine?
                self._check_running("exec")
        else:
            try:
                result = exec_once(self._api, self.container_id, user, cap, argv,
                                   timeout, wd, env, stdin)  # fmt: skip
            except ENGINE_ERRORS as e:
                raise self._api_error(e, "exec") from e
        if self._closed:
            raise self._closed_meanwhile()
        return result

    def write_files(self, files: dict[str, bytes]) -> None:
        """Through the runner as the sandbox user; where it is refused (a directory, or no
        permission), through the engine's archive calls (as root, files chowned)."""
        self._check_open()
        targets: dict[str, bytes] = {}
        for path, data in files.items():
            p = self._abs(path)
            if p == self.workdir:
                raise SandboxError(f"cannot write a file at the workdir itself ({path!r})")
            targets[p] = bytes(data)
        runner = self._channel()
        if runner is not None:
            try:
                return runner.write(targets)
            except RunnerFileError as e:
                if e.kind not in ("denied", "isdir"):
                    raise SandboxError(f"write_files failed in sandbox {self.name}: {e}") from e
            except RunnerGone as e:
                if self._closed:
                    raise self._closed_meanwhile() from e
        self._write_archives(targets)

    def _write_archives(self, targets: dict[str, bytes]) -> None:
        """Files under workdir go in one tar (with parent dirs, owned by the sandbox user);
        absolute paths elsewhere get ``mkdir -p`` as the sandbox user, then one tar per dir."""
        groups: dict[str, dict[str, bytes]] = {}
        for p, data in targets.items():
            rel = posixpath.relpath(p, self.workdir)
            if rel == ".." or rel.startswith("../"):
                groups.setdefault(posixpath.dirname(p), {})[posixpath.basename(p)] = data
            else:
                groups.setdefault(self.workdir, {})[rel] = data
        for root, group in groups.items():
            if root != self.workdir:
                res = self.exec(["mkdir", "-p", root], timeout=30)
                if res.exit_code != 0:
                    raise SandboxError(f"cannot create {root} in {self.name}: {res.stderr}")
            try:
                ok = put_files(self._api, self.container_id, root, group, self._cfg.user)
            except ENGINE_ERRORS as e:
                raise self._api_error(e, "write_files", server_errors=False) from e
            if not ok:
                raise SandboxError(f"put_archive to {root} failed in sandbox {self.name}")

    def read_file(self, path: str, max_bytes: int = DEFAULT_READ_MAX) -> bytes:
        """Through the runner; a file the sandbox user may not read through the engine."""
        self._check_open()
        p = self._abs(path)
        runner = self._channel()
        if runner is not None:
            try:
                return runner.read(p, max_bytes)
            except RunnerFileError as e:
                if e.kind == "notfound":
                    raise FileNotFoundError(f"{p} not found in sandbox {self.name}") from e
                if e.kind != "denied":
                    raise SandboxError(f"cannot read {p} in sandbox {self.name}: {e}") from e
            except RunnerGone as e:
                if self._closed:
                    raise self._closed_meanwhile() from e
        try:
            return get_file(self._api, self.container_id, p, max_bytes, self._abs,
                            f"sandbox {self.name}")  # fmt: skip
        except ENGINE_ERRORS as e:
            failure = self._api_error(e, "read_file", server_errors=False)
            if isinstance(e, docker.errors.NotFound) and type(failure) is SandboxError:
                raise FileNotFoundError(f"{p} not found in sandbox {self.name}") from e
            raise failure from e

    def snapshot(self) -> Snapshot:
        self._check_open()
        sid = uuid.uuid4().hex[:16]
        self._copy_tree("snapshot", self.workdir, f"{SNAP_ROOT}/{sid}", _SNAPSHOT_SH)
        self._snaps.add(sid)
        return Snapshot(id=sid)

    def restore(self, snap: Snapshot) -> None:
        """The workdir as the snapshot was; after a privileged command, also no process of
        the sandbox user left but its runner, and the logs folder empty and open to every
        user again (``_root_cleanup``)."""
        self._check_open()
        if snap.id not in self._snaps:
            raise SandboxError(f"snapshot {snap.id!r} does not belong to sandbox {self.name}")
        self._root_cleanup()
        self._copy_tree("restore", f"{SNAP_ROOT}/{snap.id}", self.workdir, _RESTORE_SH)

    def _root_cleanup(self, others: bool = False) -> None:
        """After a privileged command (a verifier, which takes the logs folder over): KILL
        what is left of the sandbox user's processes (its runner aside), empty the logs
        folder and open it to every user again; with ``others`` (the reset), also KILL
        every other non-root process (a service's) and remove what such users and root
        left in the places the sandbox user's reset empties (``runner.reset.sweep``, in
        the root runner, else in a runner started for it alone).  Works on a closed
        sandbox too (the reset)."""
        if not self._root_ran:
            return
        own = self._runners.current()
        request = {"uid": int(self._cfg.user.partition(":")[0]), "others": others,
                   "keep": [own.pid] if own is not None else [], "logs": self.logs_dir or "",
                   "places": [p for p, _ in reset_places(self._cfg) or []] if others else []}
        runner = self._channel(privileged=True)
        try:
            if runner is not None:
                runner.sweep(request)
            else:
                res = exec_once(self._api, self.container_id, ROOT, 4096, sweep_argv(request),
                                60, "/", None, payload())
                if not res.ok:
                    raise SandboxError(res.stderr[-500:])
        except ENGINE_ERRORS as e:
            raise self._api_error(e, "the root cleanup") from e
        except (RunnerFileError, RunnerGone, SandboxError) as e:
            raise SandboxError(f"the root cleanup failed in sandbox {self.name}: {e}") from e
        self._root_ran = False

    def _copy_tree(self, op: str, src: str, dst: str, script: str) -> None:
        """``op`` ("snapshot" or "restore") in the runner, else as a shell ``script``."""
        runner = self._channel()
        if runner is not None:
            try:
                return runner.copy_tree(op, src, dst)
            except RunnerFileError as e:
                raise SandboxError(f"{op} failed in sandbox {self.name}: {e}") from e
            except RunnerGone as e:
                if self._closed:
                    raise self._closed_meanwhile() from e
        snap, work = (dst, src) if op == "snapshot" else (src, dst)
        res = self.exec(["sh", "-c", script, op, snap, work], timeout=SNAPSHOT_TIMEOUT_S)
        if not res.ok:
            raise SandboxError(f"{op} failed in sandbox {self.name}: {res.stderr[-2000:]}")

    def _release(self) -> None:
        if self._provider._keep(self):
            return
        try:
            _remove(self._api, self.container_id)
        finally:  # the container is gone, so a runner being started fails at once
            self._runners.close()
            self._admin.close()

    def _reset(self) -> list[str]:
        """Make the container like a fresh one for another sandbox (``runner.reset``);
        returns why it could not be (empty when it is)."""
        places, runner = reset_places(self._cfg), self._runners.get()
        if places is None or runner is None:
            return ["the root filesystem is writable" if places is None
                    else "no runner can be started"]
        try:
            self._root_cleanup(others=True)
            return runner.reset(places)
        except (RunnerGone, RunnerFileError, SandboxError) as e:
            return [f"the reset failed: {e}"]


class DockerProvider(SandboxProvider):
    """Opens DockerSandbox containers for one run (one docker client, shared by threads).
    Raises SandboxUnavailableError when no daemon answers."""

    def __init__(self, config: DockerConfig, run_id: str) -> None:
        super().__init__(run_id)
        self.config = config
        self._idle: list[_Idle] = []
        try:
            self.client = docker.from_env(timeout=API_TIMEOUT)
            self.client.ping()
        except docker.errors.DockerException as e:
            raise EngineUnreachableError(
                f"no Docker daemon answers ({e}); start one with "
                "`bash environments/engine/ensure-docker.sh`"
            ) from e

    def _keep(self, sb: DockerSandbox) -> bool:
        """Keep ``sb``'s container for a later sandbox: True when reuse is on, the
        provider is open and has room, and the container's reset left it clean."""
        if not self.config.reuse or self.config.exec_via != "runner" or self._closed \
                or len(self._idle) >= MAX_IDLE:
            return False
        dirty = sb._reset()
        if dirty:
            log.debug("sandbox %s is not reused: %s", sb.name, "; ".join(dirty[:5]))
            return False
        with self._lock:
            if self._closed:
                return False
            self._idle.append(_Idle(sb.container_id, sb.name, sb.labels, sb._runners,
                                    sb._admin))
        return True

    def _reuse(self) -> DockerSandbox | None:
        """A kept container that still runs, as a new sandbox; None when there is none."""
        while self.config.reuse:
            with self._lock:
                if not self._idle:
                    return None
                idle = self._idle.pop()
            try:
                running = (self.client.api.inspect_container(idle.container_id)
                           .get("State") or {}).get("Running")
            except ENGINE_ERRORS:
                running = False
            if running:
                return DockerSandbox(self, idle.container_id, idle.name, idle.labels,
                                     runners=idle.runners, admin=idle.admin)
            self._discard(idle)
        return None

    def _discard(self, idle: _Idle) -> None:
        try:
            with contextlib.suppress(SandboxError):  # else reaped with the run
                _remove(self.client.api, idle.container_id)
        finally:
            idle.runners.close()
            idle.admin.close()

    def close(self) -> None:
        """Close every open sandbox, then remove the kept containers."""
        try:
            super().close()
        finally:
            with self._lock:
                idle, self._idle = self._idle, []
            for container in idle:
                self._discard(container)

    def _create(self, labels: dict[str, str]) -> DockerSandbox:
        reused = self._reuse()
        POOL.debug("sandbox opened in a %s container", "kept" if reused else "new",
                   extra={"pool": "reused" if reused else "new"})
        if reused is not None:
            return reused
        cfg = self.config
        # our labels win over caller labels: reap depends on them
        all_labels = {**labels, RUN_LABEL: self.run_id, OWNER_LABEL: str(os.getpid())}
        name = f"tf-{re.sub(r'[^a-zA-Z0-9_.-]', '-', self.run_id)[:40]}-{uuid.uuid4().hex[:10]}"
        via_runner = cfg.exec_via == "runner"
        scratch = scratch_mounts(cfg)
        try:  # create + start (not containers.run): a missing image must not trigger a pull
            container = self.client.containers.create(
                cfg.image, command=container_argv(cfg.user, cfg.home) if via_runner
                else ["sleep", "infinity"],
                stdin_open=via_runner, name=name, init=cfg.init,  # + StdinOnce: EOF on detach
                network_mode=cfg.network_mode, cap_drop=cfg.cap_drop, cap_add=cfg.admin_caps,
                # "none" also without libnetwork: the container keeps its own network
                # namespace (loopback only), and the engine skips its per-container
                # network hook, half of what a start and removal cost
                network_disabled=cfg.network_mode == "none",
                security_opt=cfg.security_opt, pids_limit=cfg.pids_limit,
                mem_limit=f"{cfg.memory_mb}m", memswap_limit=f"{cfg.memory_mb}m",
                nano_cpus=int(cfg.cpus * 1e9), user=ROOT, working_dir=cfg.workdir,
                labels=all_labels, log_config=LogConfig(type="none"), auto_remove=False,
                mounts=scratch.mounts, tmpfs=scratch.tmpfs, read_only=scratch.read_only,
            )  # fmt: skip
        except docker.errors.ImageNotFound as e:
            raise SandboxUnavailableError(
                f"base image {cfg.image} is missing; build it with `make image`"
            ) from e
        except ENGINE_ERRORS as e:
            what = f"cannot create a sandbox container from {cfg.image}"
            raise as_infrastructure(e, what) or SandboxError(f"{what}: {e}") from e
        attached, container_id = None, str(container.id)
        try:
            if via_runner:
                attached = attach_container(self.client.api, container_id)
            sb = DockerSandbox(self, container_id, name, all_labels, attached)
            container.start()
        except BaseException as e:
            if attached is not None:
                attached[1]()
            with contextlib.suppress(SandboxError):  # else reaped with the run
                _remove(self.client.api, container_id)
            if isinstance(e, ENGINE_ERRORS):
                what = f"cannot start sandbox container {name}"
                raise as_infrastructure(e, what) or SandboxError(f"{what}: {e}") from e
            raise
        return sb

    def reap(self, run_id: str | None = None) -> int:
        """With ``run_id``: remove every container of that run. Without: remove every
        taskfactory container whose owner process no longer exists on this host (owner
        pids are host pids: don't reap(None) from inside another pid namespace)."""
        label = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
        try:
            found = self.client.api.containers(all=True, filters={"label": label})
        except ENGINE_ERRORS as e:
            what = "cannot list sandbox containers"
            raise as_infrastructure(e, what) or SandboxError(f"{what}: {e}") from e
        with self._lock:
            mine = {sb.container_id: sb for sb in self._open if isinstance(sb, DockerSandbox)}
        removed = 0
        for c in found:
            if run_id is None and not owner_dead((c.get("Labels") or {}).get(OWNER_LABEL)):
                continue
            if c["Id"] in mine:
                mine[c["Id"]].close()
                removed += 1
            elif _remove(self.client.api, c["Id"]):
                removed += 1
        return removed


def owner_dead(pid_label: str | None) -> bool:
    """True when ``pid_label`` names a process that no longer exists on this host."""
    if not pid_label or not pid_label.isdigit():
        return False  # cannot tell: keep it
    try:
        os.kill(int(pid_label), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
