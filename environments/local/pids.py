"""A pids limit for one local sandbox, where the host lets this process set one.

RLIMIT_NPROC counts every process of the user and is not enforced for root, so it cannot
bound one sandbox.  A cgroup can: where the pids controller is writable (root on a cgroup
v1 host, or a v2 hierarchy that delegates ``pids``), each local sandbox gets its own group
with ``pids.max``, every command joins it before it execs (:meth:`PidsGroup.wrap`), and
closing the sandbox kills whatever is left in it and removes it.  Elsewhere
:func:`open_group` returns None and the local backend keeps its documented gap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

V1_ROOT, V2_ROOT = "/sys/fs/cgroup/pids", "/sys/fs/cgroup"
PARENT = "taskfactory-local"
PIDS_MAX = 256
"""Processes one local sandbox may hold at once (the docker backend's default too)."""
JOIN = 'echo $$ > "$1" && shift && exec "$@"'
"""The shell that moves itself into the group, then execs the command: no Python runs
in the child between fork and exec."""


def _hierarchy() -> str | None:
    """The directory under which pids groups can be made here, or None."""
    if os.path.isfile(os.path.join(V1_ROOT, "cgroup.procs")):
        root = V1_ROOT
    else:
        try:
            with open(os.path.join(V2_ROOT, "cgroup.subtree_control")) as f:
                if "pids" not in f.read().split():
                    return None
        except OSError:
            return None
        root = V2_ROOT
    return root if os.access(root, os.W_OK) else None


class PidsGroup:
    """One sandbox's pids cgroup (a directory of the cgroup file system)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run from inside the group (a failed join fails the command)."""
        return ["/bin/sh", "-c", JOIN, "sh", os.path.join(self.path, "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                return [int(line) for line in f if line.strip()]
        except OSError:
            return []

    def remove(self, wait_s: float = 5.0) -> None:
        """KILL every process still in the group (it cannot grow past ``pids.max`` while
        this runs), then remove the group; a group that will not empty is left behind."""
        deadline = time.monotonic() + wait_s
        while True:
            left = self.pids()
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.rmdir(self.path)
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.01 if left else 0.05)


def open_group(name: str, limit: int = PIDS_MAX) -> PidsGroup | None:
    """A new pids group named ``name`` holding at most ``limit`` processes, or None where
    this host or user cannot make one."""
    root = _hierarchy()
    if root is None:
        return None
    parent = os.path.join(root, PARENT)
    path = os.path.join(parent, name)
    try:
        os.makedirs(parent, exist_ok=True)
        if root == V2_ROOT:
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                f.write("+pids")
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        return None
    return PidsGroup(path)


def remove_group(name: str) -> None:
    """Kill and remove the group ``name`` if one exists (a sandbox never closed)."""
    root = _hierarchy()
    if root is not None and os.path.isdir(path := os.path.join(root, PARENT, name)):
        PidsGroup(path).remove()
