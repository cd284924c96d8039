"""The Sandbox contract: run commands and move files inside an isolated working directory.

Two backends implement it: ``environments.docker`` (one container per sandbox, the real
isolation) and ``environments.local`` (a temp dir on the host, weaker isolation); more can
be added by name (``environments.registry``).  Every backend runs the same conformance
suite (tests/integration/test_sandbox_conformance.py), each with its list of known gaps.

Typical use::

    provider = make_provider(resolve_backend("auto"), run_id="run-42")
    with provider.sandbox(labels={"task": "t1"}) as sb:
        sb.write_files({"main.py": b"print('hi')"})
        res = sb.exec(["python3", "main.py"], timeout=10)
        assert res.exit_code == 0 and res.stdout == "hi\\n"
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Protocol, Self

from pydantic import BaseModel, ConfigDict

DEFAULT_OUTPUT_CAP = 8 * 2**20
"""A stream's bytes kept per command by default: a probe of the hard tier's states (ten
times the entries) prints about 1 MB of JSON, a stack's more."""
DEFAULT_READ_MAX = 10 * 2**20
TIMEOUT_EXIT_CODE = 124


class ExecResult(BaseModel):
    """Outcome of one ``Sandbox.exec`` call.

    ``stdout``/``stderr`` are decoded as UTF-8 with ``errors="replace"``. When a stream
    produced more than the output cap, only its TAIL (the last cap bytes) is kept and
    ``truncated`` is True. ``timed_out`` is True only when the command was killed because
    it ran past its timeout (then ``exit_code`` is 124, or 137 if it had to be SIGKILLed).
    """

    model_config = ConfigDict(frozen=True)

    exit_code: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        """True when the command exited 0 and did not time out."""
        return self.exit_code == 0 and not self.timed_out


class SandboxError(Exception):
    """Base class of every sandbox failure (not raised for non-zero exit codes)."""


class SandboxClosedError(SandboxError):
    """A verb was called on a closed sandbox, or ``open()`` on a closed provider."""


class SandboxUnavailableError(SandboxError):
    """The backend cannot be used here (no Docker daemon, base image missing, ...)."""


class InfrastructureError(SandboxError):
    """What failed is the machinery under the sandbox, not the command: the engine is
    unreachable or restarting, it answered with a server error, or the sandbox's container
    vanished or stopped under a running candidate.  Never a verdict on a task: callers wait
    for the engine and retry in a fresh sandbox."""


class Snapshot(BaseModel):
    """Opaque handle to a snapshot of a sandbox's workdir (valid for that sandbox only)."""

    model_config = ConfigDict(frozen=True)

    id: str


class TailBuffer:
    """Bounded byte buffer keeping only the last ``cap`` bytes written to it."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self.total = 0
        self._buf = bytearray()

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if len(data) >= self.cap:
            self._buf = bytearray(data[len(data) - self.cap :]) if self.cap else bytearray()
            return
        self._buf += data
        if len(self._buf) > 2 * self.cap:  # amortised trimming
            del self._buf[: len(self._buf) - self.cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def getvalue(self) -> bytes:
        return bytes(self._buf[-self.cap :]) if self.cap else b""

    def text(self) -> str:
        return self.getvalue().decode("utf-8", errors="replace")


class _ClosesOnExit:
    """``with obj:`` closes ``obj`` on the way out, whatever happened inside."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Sandbox(_ClosesOnExit, abc.ABC):
    """One isolated working directory in which commands run.

    All verbs raise ``SandboxClosedError`` after ``close()``, and ``InfrastructureError``
    when the machinery under the sandbox fails (the engine stops answering, the container
    is gone); a command's own failure is never an exception.  Usable as a context manager
    (closes on exit).
    """

    #: absolute path inside the sandbox where commands run by default
    #: ("/workspace" for docker; the real temp dir path for the local backend)
    workdir: str
    #: "uid:gid" of the sandbox user, when ``exec(..., privileged=True)`` runs as another
    #: user (root) that can stop the sandbox user's processes and read its files; None
    #: where the backend has one user only (local): a verifier there runs with the same
    #: rights as what it judges.
    agent_user: str | None = None
    #: a folder every user may write, where a verifier writes its reward (laid out as
    #: Harbor's ``/logs/verifier``, so attacks on the reward file can be tried); None where
    #: the backend has none.
    logs_dir: str | None = None

    def __init__(self, provider: SandboxProvider) -> None:
        self._provider = provider
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError(f"{type(self).__name__} is closed")

    def exec(
        self,
        argv: list[str],
        *,
        timeout: float = 30.0,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        privileged: bool = False,
    ) -> ExecResult:
        """Run ``argv`` (no shell unless argv is ``["bash", "-c", ...]``) and wait for it.

        ``workdir`` defaults to ``self.workdir`` (relative paths are under it); ``env`` is
        added to the sandbox's base environment. ``stdin`` bytes, when given, are fed to the
        process's stdin, which is then closed (otherwise stdin is empty/closed). After
        ``timeout`` seconds the whole process tree is killed and the result has
        ``timed_out=True`` and exit code 124 (or 137), and every process the command started
        is killed too, in its process group or not (``setsid``, double forks, ``nohup``):
        each inherits ``TF_EXEC_ID``, the exec's id (see the backends for what else they
        kill).  When the command exits in time, processes it left running in its process
        group (background jobs, fork bombs) are killed; a service meant to outlive the call
        must start its own session (``setsid``).
        ``privileged``: run as the sandbox's administrator (root, holding only the
        capabilities the backend names) instead of the sandbox user — for the
        environment's own machinery (a service's start, the verifier), never for what an
        agent does.  Where ``agent_user`` is None it runs as the sandbox user.
        Never raises for non-zero exit codes (a missing command gives 127); ``ValueError``
        for an empty ``argv`` or a timeout that is not positive.
        """
        self._check_open()
        if not argv or timeout <= 0:
            raise ValueError("argv must be non-empty and timeout positive")
        return self._exec(argv, timeout, workdir, env, stdin, privileged)

    @abc.abstractmethod
    def _exec(self, argv: list[str], timeout: float, workdir: str | None,
              env: dict[str, str] | None, stdin: bytes | None,
              privileged: bool = False) -> ExecResult:
        """``exec`` once its arguments are checked and the sandbox was open."""

    @abc.abstractmethod
    def write_files(self, files: dict[str, bytes]) -> None:
        """Write files (paths relative to workdir, or absolute inside the sandbox, where it
        can be written: docker's root filesystem is read-only, see
        ``environments.docker.mounts``).

        Parent directories are created; files are owned by the sandbox user (mode 0644).
        """

    @abc.abstractmethod
    def read_file(self, path: str, max_bytes: int = DEFAULT_READ_MAX) -> bytes:
        """Return a file's bytes. ``FileNotFoundError`` if it does not exist;
        ``SandboxError`` if it is larger than ``max_bytes`` or not a regular file."""

    @abc.abstractmethod
    def snapshot(self) -> Snapshot:
        """Capture the full contents of workdir (files, dirs, modes, symlinks, dotfiles)."""

    @abc.abstractmethod
    def restore(self, snap: Snapshot) -> None:
        """Make workdir exactly the snapshot again (later files are removed).
        A snapshot can be restored any number of times."""

    def close(self) -> None:
        """Release the sandbox and everything in it (a backend may keep what held it, once
        emptied, for its provider's next sandbox: see ``DockerConfig.reuse``).  Idempotent
        and thread-safe: the first call marks it closed (verbs in flight then raise
        ``SandboxClosedError``), tells the provider, and releases it; later calls return
        at once."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._provider._forget(self)
        self._release()

    @abc.abstractmethod
    def _release(self) -> None:
        """Free what the sandbox holds (its container, its folder, its processes); called
        once, by ``close``, after ``closed`` became True."""


class Initial(Protocol):
    """A sandbox and the snapshot of the initial state that work on it starts from (the
    gate's controls, the describers; ``tasks.execute.realize.LiveEnvironment`` is one)."""

    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def initial(self) -> Snapshot: ...


class SandboxProvider(_ClosesOnExit, abc.ABC):
    """Creates sandboxes for one run (``run_id``) and cleans up after them.

    Thread-safe: ``close()`` may be called from another thread (e.g. on Ctrl-C) while
    sandboxes are being opened or used.
    """

    def __init__(self, run_id: str) -> None:
        if not run_id:
            raise ValueError("run_id must be a non-empty string")
        self.run_id = run_id
        self._lock = threading.Lock()
        self._open: set[Sandbox] = set()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def open(self, *, labels: dict[str, str] | None = None) -> Sandbox:
        """Create a new sandbox. ``SandboxClosedError`` once the provider is closed (also
        when it closes while the sandbox is being created: that one is closed again)."""
        self._check_open()
        sb = self._create(dict(labels or {}))
        with self._lock:
            if not self._closed:
                self._open.add(sb)
                return sb
        sb.close()
        raise SandboxClosedError(f"provider for run {self.run_id} was closed")

    @abc.abstractmethod
    def _create(self, labels: dict[str, str]) -> Sandbox:
        """A new, running sandbox carrying ``labels`` (called by ``open``)."""

    @contextmanager
    def sandbox(self, *, labels: dict[str, str] | None = None) -> Iterator[Sandbox]:
        """``with provider.sandbox(labels=...) as sb:`` opens a sandbox and closes it after."""
        sb = self.open(labels=labels)
        try:
            yield sb
        finally:
            sb.close()

    @abc.abstractmethod
    def reap(self, run_id: str | None = None) -> int:
        """Remove leftover sandboxes: with ``run_id``, all of that run; without, all whose
        owner process is dead. Returns the number removed."""

    def close(self) -> None:
        """Close every sandbox this provider opened and refuse new opens. Idempotent."""
        with self._lock:
            self._closed = True
            sandboxes = list(self._open)
            self._open.clear()
        errors: list[BaseException] = []
        for sb in sandboxes:
            try:
                sb.close()
            except Exception as e:  # keep closing the others
                errors.append(e)
        if errors:
            infra = all(isinstance(e, InfrastructureError) for e in errors)
            raise (InfrastructureError if infra else SandboxError)(
                f"{len(errors)} sandbox(es) failed to close: {errors[0]!r}")

    def _forget(self, sb: Sandbox) -> None:
        """``sb`` closed: no longer one of the provider's open sandboxes."""
        with self._lock:
            self._open.discard(sb)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError(f"{type(self).__name__} for run {self.run_id} is closed")

