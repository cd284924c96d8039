"""Realization: turn an ecosystem seed into a live environment inside a sandbox.

Writes the seed files, runs the ecosystem's ``setup`` command, adds what repairs found
missing (:class:`EnvAdditions`), starts its ``service`` and waits until it is ready, then
snapshots the workspace: that snapshot is the initial state every later phase restores.
:func:`probe` reads the ecosystem's state as JSON.  :class:`LiveEnvironment` owns the
sandbox of one candidate and can realize it again with a missing piece.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import InfrastructureError, Sandbox, SandboxUnavailableError, Snapshot
from schemas.ecosystem import ServiceSpec
from schemas.trace import EnvAdditions
from tasks.core.failures import StageFailure, user_code_failure

SETUP_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 30.0

OpenSandbox = Callable[[tuple[str, ...]], AbstractContextManager[Sandbox]]
"""Opens a sandbox whose image has these extra Debian packages (raises
SandboxUnavailableError when it cannot be built or the backend cannot install packages)."""


def realize(sandbox: Sandbox, eco: Ecosystem, seed: int,
            additions: EnvAdditions | None = None,
            fault: str | None = None, scale: int = 1) -> tuple[dict[str, bytes], Snapshot]:
    """Seed at ``scale`` (with ``fault``'s defect planted), set up, add ``additions`` and
    start the environment; returns the seed files and the snapshot of the initial state."""
    try:
        files = eco.seed_state(seed, fault, scale)
    except UserCodeError as exc:
        raise user_code_failure("realize", exc) from exc
    except LookupError as exc:
        raise StageFailure("realize", "environment",
                           f"fault {fault!r} has no place in seed {seed}: {exc}") from exc
    sandbox.write_files(files)
    spec = eco.spec
    if spec.setup:
        _run(sandbox, spec.setup, SETUP_TIMEOUT_S, "setup failed")
    if additions:
        if additions.dirs:
            _run(sandbox, "mkdir -p -- " + " ".join(map(shlex.quote, additions.dirs)), 30,
                 "cannot create the added directories")
        sandbox.write_files({p: text.encode() for p, text in additions.files.items()})
    if spec.service:
        own_user = sandbox.agent_user is not None
        _run(sandbox, service_start_command(spec.service, own_user),
             spec.service.ready_timeout_s + 5, "service did not become ready",
             privileged=own_user)
    return files, sandbox.snapshot()


def service_start_command(svc: ServiceSpec, own_user: bool = True) -> str:
    """One shell command that starts ``svc`` detached and exits 0 once it is ready (1, with
    the service log on stderr, after ``ready_timeout_s``).  With ``own_user`` it runs as
    root: it opens the folders the service writes to every user and starts the server as
    the service's own user (``setpriv``, every capability dropped); without, as whoever
    runs it (the local backend's one user).

    Start and wait happen in one command: the sandbox kills what an exec leaves in its
    process group when it returns, so the server must have left the group (setsid) by then.
    The Harbor export's entrypoint runs the same command.  With ``own_user``, a server of
    that user still running (the state realized again in the same sandbox) is stopped
    first: otherwise the new one cannot listen, and the old one would pass the readiness
    check."""
    polls = max(1, int(svc.ready_timeout_s / 0.1))
    start, opened = f"bash -c {shlex.quote(svc.start)}", ""
    if own_user:
        uid, gid = svc.user.split(":")
        start = f"setpriv --reuid={uid} --regid={gid} --clear-groups --no-new-privs {start}"
        opened = (f"pkill -KILL -u {uid}; while pgrep -u {uid} >/dev/null; do sleep 0.02; "
                  "done; ")
        if svc.writes:
            opened += f"chmod 0777 -- {' '.join(map(shlex.quote, svc.writes))} && "
    return (f"{opened}setsid nohup {start} >/tmp/service.log 2>&1 </dev/null &"
            f" for _ in $(seq {polls}); do ({svc.ready}) >/dev/null 2>&1 && exit 0; "
            "sleep 0.1; done; cat /tmp/service.log >&2; exit 1")


def env_digest(files: dict[str, bytes], additions: EnvAdditions) -> str:
    """Content digest of an environment: the seed files plus the repairs' additions."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    if additions:
        h.update(additions.model_dump_json().encode())
    return h.hexdigest()[:20]


def state_digest(state: dict) -> str:
    """sha256 of a probe state in canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def first_difference(a: dict, b: dict) -> str | None:
    """``section/key`` of the first entry where two probe states differ, else None."""
    for section in sorted(set(a) | set(b)):
        sa, sb = a.get(section, {}), b.get(section, {})
        for key in sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                return f"{section}/{key}"
    return None


def state_without(state: dict, key: str | None) -> dict:
    """``state`` minus entry ``key`` in every section (the answer file is not state)."""
    return {section: {k: v for k, v in entries.items() if k != key}
            for section, entries in state.items()}


def _run(sandbox: Sandbox, command: str, timeout: float, what: str,
         privileged: bool = False) -> None:
    done = sandbox.exec(["bash", "-c", command], timeout=timeout, privileged=privileged)
    if done.exit_code != 0:
        raise StageFailure("realize", "environment", f"{what} (exit {done.exit_code}): "
                                                     f"{done.stderr.strip()[-300:]}")


def probe(sandbox: Sandbox, eco: Ecosystem) -> dict:
    """The ecosystem's state as canonical JSON, read inside the sandbox."""
    result = sandbox.exec(["python3", "-"], stdin=eco.probe_source.encode(),
                          timeout=PROBE_TIMEOUT_S)
    if result.timed_out:
        raise StageFailure("verify", "timeout",
                           f"the probe did not finish within {PROBE_TIMEOUT_S:.0f} s")
    if result.exit_code != 0:
        raise StageFailure("verify", "environment",
                           f"probe failed: {result.stderr.strip()[-200:]}")
    if result.truncated:
        raise StageFailure("verify", "environment",
                           "the probe printed more than the sandbox keeps of a command's "
                           "output (output_cap_bytes); raise it in the backend config")
    return json.loads(result.stdout)


class LiveEnvironment:
    """One candidate's environment, realized in a sandbox it owns (a context manager);
    with ``fault``, the seed carries that injector's defect; ``scale`` is the seed's
    (``Ecosystem.seed_state``: the hard tier's is larger).

    ``sandbox``, ``initial`` (the snapshot of the initial state) and ``before`` (its probe)
    change when a repair realizes the environment again with a missing piece: a file or a
    directory (same sandbox, restored first) or a Debian package (a new image, so a new
    sandbox).  ``additions`` is everything added so far; the task's environment is the
    seed plus these.
    """

    def __init__(self, eco: Ecosystem, seed: int, open_sandbox: OpenSandbox,
                 additions: EnvAdditions | None = None, fault: str | None = None,
                 scale: int = 1) -> None:
        self.eco, self.seed, self._open, self.fault = eco, seed, open_sandbox, fault
        self.scale = scale
        self.additions = additions or EnvAdditions()
        self._stack = ExitStack()
        self.sandbox: Sandbox
        self.initial: Snapshot
        self.before: dict = {}
        self.files: dict[str, bytes] = {}

    def __enter__(self) -> LiveEnvironment:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    def _start(self) -> None:
        self.sandbox = self._stack.enter_context(self._open(tuple(self.additions.packages)))
        self.files, self.initial = realize(self.sandbox, self.eco, self.seed, self.additions,
                                            self.fault, self.scale)
        self.before = probe(self.sandbox, self.eco)

    def add(self, files: dict[str, str] | None = None, dirs: list[str] | None = None) -> None:
        """Realize again with these files or directories added (in the same sandbox)."""
        self.additions = self.additions.model_copy(update={
            "files": {**self.additions.files, **(files or {})},
            "dirs": sorted({*self.additions.dirs, *(dirs or [])})})
        self.sandbox.restore(self.initial)
        if dirs:
            _run(self.sandbox, "mkdir -p -- " + " ".join(map(shlex.quote, dirs)), 30,
                 "cannot create the added directories")
        if files:
            self.sandbox.write_files({p: t.encode() for p, t in files.items()})
        self.initial = self.sandbox.snapshot()
        self.before = probe(self.sandbox, self.eco)

    def add_package(self, package: str) -> bool:
        """Realize again in a new sandbox whose image has ``package``; False (and nothing
        changed) when that image cannot be had."""
        packages = sorted({*self.additions.packages, package})
        try:
            fresh = self._open(tuple(packages))
            sandbox = fresh.__enter__()
        except InfrastructureError:  # the engine's failure, not the package's
            raise
        except SandboxUnavailableError:
            return False
        old, self._stack = self._stack, ExitStack()
        old.close()
        self._stack.push(fresh)
        self.sandbox = sandbox
        self.additions = self.additions.model_copy(update={"packages": packages})
        self.files, self.initial = realize(self.sandbox, self.eco, self.seed, self.additions,
                                            self.fault, self.scale)
        self.before = probe(self.sandbox, self.eco)
        return True
