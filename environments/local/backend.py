"""Local backend: each sandbox is a temp dir on the host; commands run as subprocesses.

Layout of a sandbox root (``tempfile.mkdtemp(prefix=f"taskfactory-{run_id}-")``)::

    workspace/   the workdir (``Sandbox.workdir`` is its real absolute path)
    snapshots/   one copy of workspace per snapshot
    home/ tmp/   HOME and TMPDIR of the commands
    .taskfactory-sandbox   marker file holding the run id (used by reap)

Commands get a clean environment, their own session/process group (a timeout SIGKILLs the
whole group, and every process that inherited the exec's ``TF_EXEC_ID``) and rlimits:
RLIMIT_AS (memory_mb), RLIMIT_CPU (cpu_seconds), RLIMIT_FSIZE (max_file_mb), set by
``prlimit`` (util-linux) in the command's own process.  Where the host lets this process
make a pids cgroup (root), each sandbox's commands share one with ``pids.max``
(:mod:`environments.local.pids`), and closing the sandbox kills what is left in it.  Paths
given as "/workspace/..." (the docker workdir) map into the temp workspace; paths escaping
the sandbox root raise SandboxError.

Known gaps versus the docker backend (weaker isolation -- use docker for untrusted code):
no network isolation; no pids limit where no pids cgroup can be made (RLIMIT_NPROC is
per-user, and not enforced for root);
commands run as the calling user and can read the rest of the host filesystem, and
``privileged`` commands run as that same user (``agent_user`` is None: a verifier cannot
stop what a command left running, nor keep its reward file from it); a process
that leaves the command's session and clears its environment (``env -i setsid ...``)
escapes the timeout kill (the docker backend also kills by start time: there every
process belongs to the sandbox). ``reap(None)`` returns 0: dead-owner
reaping is docker-only (local sandboxes are removed by ``close``/``reap(run_id)``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from environments.local.pids import open_group, remove_group
from environments.runner import procs
from environments.sandbox import (
    DEFAULT_READ_MAX,
    TIMEOUT_EXIT_CODE,
    ExecResult,
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxProvider,
    Snapshot,
    TailBuffer,
)

if TYPE_CHECKING:
    from environments.local.config import LocalConfig

WORKDIR_ALIAS = "/workspace"
MARKER = ".taskfactory-sandbox"
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
PRLIMIT = shutil.which("prlimit") or "/usr/bin/prlimit"  # util-linux


def _safe(run_id: str) -> str:
    """run id usable in a file name."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "_", run_id)[:64]


def _drain(stream: IO[bytes], buf: TailBuffer) -> None:
    try:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            buf.write(chunk)
    except (OSError, ValueError):
        pass


def _wait_exit(pid: int, deadline: float) -> bool:
    """Wait until process ``pid`` exits WITHOUT reaping it; False if ``deadline`` passes."""
    delay = 0.0005
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        delay = min(delay * 2, remaining, 0.05)
        time.sleep(delay)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _result(code: int, out: str, err: str, start: float, timed_out: bool = False,
            truncated: bool = False) -> ExecResult:  # fmt: skip
    return ExecResult(exit_code=code, stdout=out, stderr=err, duration_s=time.monotonic() - start,
                      timed_out=timed_out, truncated=truncated)  # fmt: skip


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


class LocalSandbox(Sandbox):
    def __init__(self, provider: LocalProvider, root: str, labels: dict[str, str]) -> None:
        super().__init__(provider)
        self._cfg, self.root, self.labels = provider.config, root, labels
        self.workdir = os.path.join(root, "workspace")
        self._snapdir = os.path.join(root, "snapshots")
        self._procs: set[int] = set()  # running process groups, killed by close()
        self._procs_lock = threading.Lock()
        self._pids = open_group(os.path.basename(root))

    def _resolve(self, path: str) -> str:
        """Host path for a sandbox path; SandboxError if it escapes the sandbox root."""
        if path == WORKDIR_ALIAS or path.startswith(WORKDIR_ALIAS + "/"):
            path = self.workdir + path[len(WORKDIR_ALIAS) :]
        p = os.path.realpath(os.path.join(self.workdir, path))  # symlinks resolved too
        if os.path.commonpath([self.root, p]) != self.root:
            raise SandboxError(f"path {path!r} escapes the sandbox")
        return p

    def _limited(self, argv: list[str]) -> list[str]:
        """``argv`` under ``prlimit``, which sets the rlimits in its own process and then
        execs the command. No Python runs in the child between fork and exec (a
        ``preexec_fn`` would run the interpreter's at-fork hooks there, and a Ctrl-C sent
        to the terminal's process group in that window prints a traceback from them)."""
        cfg, opts = self._cfg, []
        for name, res, val in (
            ("as", resource.RLIMIT_AS, cfg.memory_mb * 2**20),
            ("cpu", resource.RLIMIT_CPU, cfg.cpu_seconds),
            ("fsize", resource.RLIMIT_FSIZE, cfg.max_file_mb * 2**20),
        ):
            hard = resource.getrlimit(res)[1]  # the child inherits this process's limits
            val = val if hard == resource.RLIM_INFINITY else min(val, hard)
            opts.append(f"--{name}={val}:{val}")
        return [PRLIMIT, *opts, "--", *argv]

    def _confined(self, argv: list[str]) -> list[str]:
        """``argv`` under the rlimits, run from inside the sandbox's pids group if any."""
        argv = self._limited(argv)
        return self._pids.wrap(argv) if self._pids else argv

    def _exec(self, argv: list[str], timeout: float, workdir: str | None,
              env: dict[str, str] | None, stdin: bytes | None,
              privileged: bool = False) -> ExecResult:
        """``privileged`` changes nothing: the local backend has one user."""
        cwd = self._resolve(workdir) if workdir else self.workdir
        home, tmp = os.path.join(self.root, "home"), os.path.join(self.root, "tmp")
        marker = uuid.uuid4().hex[:16]
        full_env = {"PATH": BASE_PATH, "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                    "TMPDIR": tmp, **(env or {}), procs.MARKER: marker}  # fmt: skip
        out, err = TailBuffer(self._cfg.output_cap_bytes), TailBuffer(self._cfg.output_cap_bytes)
        start = time.monotonic()
        if not os.path.isdir(cwd):  # what docker reports for a missing workdir
            return _result(126, "", f"chdir to cwd {cwd!r} failed: no such directory\n", start)
        try:
            with self._procs_lock:
                self._check_open()
                proc = subprocess.Popen(
                    self._confined(argv), cwd=cwd, env=full_env, start_new_session=True,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                )  # fmt: skip
                self._procs.add(proc.pid)
        except OSError as e:  # prlimit itself (a missing command is prlimit's 127/126)
            raise SandboxError(f"cannot start {PRLIMIT}: {e.strerror}; the local backend "
                               "needs util-linux's prlimit on the host") from e
        jobs: list[tuple[Callable[..., None], IO[bytes] | None, object]] = [
            (_drain, proc.stdout, out), (_drain, proc.stderr, err)]
        if stdin is not None:
            jobs.append((_feed, proc.stdin, stdin))
        threads = [threading.Thread(target=f, args=(s, a), daemon=True) for f, s, a in jobs]
        for t in threads:
            t.start()
        timed_out = not _wait_exit(proc.pid, start + timeout)
        # kill the whole process group: the tree on timeout, leftovers (background
        # children, fork bombs) otherwise. The main process is still an unreaped zombie
        # here, so its pid (= the group id) cannot have been reused.
        with self._procs_lock:
            _killpg(proc.pid)
            proc.wait()
            self._procs.discard(proc.pid)
        if timed_out:  # what left the group (setsid, double forks) but kept the marker
            procs.kill_strays(marker, None)
        for t in threads:
            t.join(5.0)  # pipes close once the group is dead (setsid escapees aside)
        if not any(t.is_alive() for t in threads):
            for f in (proc.stdout, proc.stderr, proc.stdin):
                if f is not None:
                    with contextlib.suppress(OSError):
                        f.close()
        if self._closed:
            raise SandboxClosedError("sandbox was closed while the command ran")
        code = TIMEOUT_EXIT_CODE if timed_out else proc.returncode
        code = 128 - code if code < 0 else code  # killed by a signal: report like a shell
        truncated = out.truncated or err.truncated
        return _result(code, out.text(), err.text(), start, timed_out, truncated)

    def write_files(self, files: dict[str, bytes]) -> None:
        self._check_open()
        for path, data in files.items():
            p = self._resolve(path)
            if p == self.workdir:
                raise SandboxError(f"cannot write a file at the workdir itself ({path!r})")
            os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
            self._resolve(p)  # re-check after creating parents
            with open(p, "wb") as f:
                f.write(bytes(data))
            os.chmod(p, 0o644)

    def read_file(self, path: str, max_bytes: int = DEFAULT_READ_MAX) -> bytes:
        self._check_open()
        real = self._resolve(path)
        if not os.path.exists(real):
            raise FileNotFoundError(f"{path} not found in sandbox")
        if not os.path.isfile(real):
            raise SandboxError(f"cannot read {path!r}: not a regular file")
        with open(real, "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise SandboxError(f"cannot read {path!r}: larger than max {max_bytes} bytes")
        return data

    def snapshot(self) -> Snapshot:
        self._check_open()
        sid = uuid.uuid4().hex[:16]
        try:
            shutil.copytree(self.workdir, os.path.join(self._snapdir, sid), symlinks=True)
        except (OSError, shutil.Error) as e:
            raise SandboxError(f"snapshot failed: {e}") from e
        return Snapshot(id=sid)

    def restore(self, snap: Snapshot) -> None:
        self._check_open()
        src = os.path.join(self._snapdir, snap.id)
        if not snap.id.isalnum() or not os.path.isdir(src):
            raise SandboxError(f"snapshot {snap.id!r} does not belong to this sandbox")
        try:
            for dirpath, _, _ in os.walk(self.workdir):  # read-only dirs must be emptied too
                os.chmod(dirpath, os.stat(dirpath).st_mode | 0o700)
            for entry in os.scandir(self.workdir):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            shutil.copytree(src, self.workdir, symlinks=True, dirs_exist_ok=True)
            shutil.copystat(src, self.workdir)
        except (OSError, shutil.Error) as e:
            raise SandboxError(f"restore failed: {e}") from e

    def _release(self) -> None:
        with self._procs_lock:
            for pgid in self._procs:
                _killpg(pgid)
        if self._pids:
            self._pids.remove()
        shutil.rmtree(self.root, ignore_errors=True)


class LocalProvider(SandboxProvider):
    """Opens LocalSandbox temp dirs for one run (see the module docstring for the gaps)."""

    def __init__(self, config: LocalConfig, run_id: str) -> None:
        super().__init__(run_id)
        self.config = config

    def _create(self, labels: dict[str, str]) -> LocalSandbox:
        root = os.path.realpath(tempfile.mkdtemp(prefix=f"taskfactory-{_safe(self.run_id)}-"))
        for sub in ("workspace", "snapshots", "home", "tmp"):
            os.mkdir(os.path.join(root, sub), 0o755)
        with open(os.path.join(root, MARKER), "w") as f:
            f.write(f"{self.run_id}\n{os.getpid()}\n")
        return LocalSandbox(self, root, labels)

    def reap(self, run_id: str | None = None) -> int:
        """With ``run_id``: remove that run's sandbox dirs. Without: returns 0 (local
        sandboxes have no owner-liveness tracking; see the module docstring)."""
        if not run_id:
            return 0
        with self._lock:
            mine = {sb.root: sb for sb in self._open if isinstance(sb, LocalSandbox)}
        removed = 0
        tmp = os.path.realpath(tempfile.gettempdir())
        for root in glob.glob(os.path.join(tmp, f"taskfactory-{glob.escape(_safe(run_id))}-*")):
            try:
                with open(os.path.join(root, MARKER)) as f:
                    if f.readline().strip() != run_id:
                        continue
            except OSError:
                continue
            if root in mine:
                mine[root].close()
            else:
                remove_group(os.path.basename(root))
                shutil.rmtree(root, ignore_errors=True)
            removed += 1
        return removed
