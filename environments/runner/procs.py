"""Process helpers of the in-container runner (standard library only)."""

from __future__ import annotations

import contextlib
import os
import signal
import time

TYPE_CHECKING = False  # typing is not imported at run time: the runner starts fast
if TYPE_CHECKING:
    from collections.abc import Callable


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def open_pidfd(pid: int) -> int | None:
    """A pidfd (readable once ``pid`` exits, before it is reaped), or None where the
    kernel or Python lack them (then the supervisor polls with ``waitid``)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def has_exited(pid: int) -> bool:
    """True once ``pid`` is a zombie; does not reap it (its pgid stays reserved)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def exec_environment() -> dict[str, str]:
    """The environment ``docker exec`` gave this process, before Python's start-up touched
    it (it may add ``LC_CTYPE`` under a C locale)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
        return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}
    except OSError:
        return dict(os.environ)


def reap_sessions(sids: set[int]) -> None:
    """KILL every process group whose processes belong to one of the sessions ``sids``."""
    for _ in range(3):
        groups = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z" and int(fields[3]) in sids:
                groups.add(int(fields[2]))
        if not groups:
            return
        for pgid in groups:
            signal_group(pgid, signal.SIGKILL)
        time.sleep(0.01)


MARKER = "TF_EXEC_ID"
"""Environment variable every command of a sandbox inherits: the id of the exec that
started it (:func:`kill_strays` finds what a timed-out exec left by it)."""


def boot_ticks() -> float:
    """Now, in the clock of ``/proc/<pid>/stat``'s start time: ticks since boot."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK")


def kill_strays(marker: str, since: float | None, keep: tuple[int, ...] = (),
                first_pid: int = 0) -> int:
    """KILL what a timed-out exec left anywhere, in its group or not (``setsid``, double
    forks, ``nohup``): every process of this uid whose environment carries
    ``TF_EXEC_ID=marker``, and — when ``since`` (boot ticks at the exec's start) is given —
    every process of this uid started since then that carries no ``TF_EXEC_ID`` at all
    (it cleared its environment; one carrying another exec's id belongs to that exec).
    Start times count in clock ticks (10 ms), so a process started in the exec's first
    tick is the exec's only when its pid is at least ``first_pid`` (the exec's own
    process): one started just before the exec, in the same tick, is spared.  Never this
    process, its parent or ``keep``.  Returns how many were killed.

    A process forked by the runner without an exec (``pyfork``) shows the runner's
    environment, so a concurrent exec's forked ``python3 -`` counts as carrying no id."""
    tag = f"{MARKER}={marker}".encode()

    def stray(pid: int, fields: list[bytes], env: list[bytes]) -> bool:
        ours = tag in env
        unmarked = not any(e.startswith(f"{MARKER}=".encode()) for e in env)
        started = int(fields[19])
        new = since is not None and (started > int(since) or (
            started == int(since) and pid >= first_pid))
        return ours or (unmarked and new)

    return _sweep(stray, keep)


def kill_all(keep: tuple[int, ...] = ()) -> int:
    """KILL every process of this uid but this one, its parent, pid 1 and ``keep``;
    returns how many were killed."""
    return _sweep(lambda pid, fields, env: True, keep)


def kill_users(uid: int, others: bool, keep: tuple[int, ...] = ()) -> int:
    """As root: KILL every process with ``uid`` among its uids (with ``others``, every
    process with a uid that is not root's) but this one, its parent, pid 1 and ``keep``;
    returns how many were killed."""
    mine = str(uid).encode()

    def owned(uids: list[bytes]) -> bool:
        return mine in uids or (others and any(u != b"0" for u in uids))

    return _sweep(lambda pid, fields, env: True, keep, owned)


def survivors(keep: tuple[int, ...] = ()) -> list[int]:
    """The live (not zombie) processes of this uid but this one, its parent, pid 1 and
    ``keep``."""
    return [pid for pid, _, _ in _processes(keep)]


def _uids(pid: str) -> list[bytes]:
    """The real, effective, saved and filesystem uids of ``pid`` from its ``status`` (which
    every user may read): the owner of ``/proc/<pid>`` is root for a process that made
    itself non-dumpable, so it cannot tell whose the process is."""
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"Uid:"):
                return line.split()[1:]
    return []


def _processes(keep: tuple[int, ...], owned: Callable[[list[bytes]], bool] | None = None
               ) -> list[tuple[int, list[bytes], list[bytes]]]:  # fmt: skip
    """(pid, stat fields after the name, environment) of each live process whose uids
    ``owned`` accepts (default: those of this uid), but this one, its parent, pid 1 and
    ``keep``.  A process whose environment cannot be read (it made itself non-dumpable)
    is listed with an empty one: it is still there to be killed."""
    me, uid = os.getpid(), str(os.getuid()).encode()
    spared = {me, os.getppid(), 1, *keep}
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spared:
            continue
        try:
            uids = _uids(name)
            if not (owned(uids) if owned is not None else uid in uids):
                continue
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            env = []
        if fields[0] != b"Z":
            found.append((int(name), fields, env))
    return found


def _sweep(select: Callable[[int, list[bytes], list[bytes]], bool],
           keep: tuple[int, ...], owned: Callable[[list[bytes]], bool] | None = None) -> int:
    """KILL the processes of :func:`_processes` that ``select`` picks, three rounds (one
    being killed may have forked meanwhile); returns how many were killed."""
    killed = 0
    for _ in range(3):
        found = [pid for pid, fields, env in _processes(keep, owned)
                 if select(pid, fields, env)]
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        time.sleep(0.01)
    return killed
