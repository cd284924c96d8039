"""Reset of a sandbox container for its next sandbox (standard library only).

The runner doing it is the only process of the sandbox user to keep: the container's own
command, or the runner ``docker exec`` started after a command killed that one (``kill -9
-1`` as the sandbox user).  :func:`reset` KILLs every other process of the sandbox user,
empties the places the sandbox may write (the host names them: with a read-only root filesystem
they are all there is), and then checks what a fresh container would not have: a process
left, an entry left in one of those places, System V IPC objects or message queues, an
open socket, or a connection in TIME_WAIT on a server's port (a server binding that
port again without SO_REUSEADDR would fail).  Anything found is named in
the answer's ``dirty`` list, and the host removes the container instead of keeping it.

:func:`sweep` is what the root runner does after a privileged command (the host's root
cleanup), in the runner's own process: no command is started for it.
"""

from __future__ import annotations

import contextlib
import os
import time

from environments.runner.files import empty_dir
from environments.runner.procs import kill_all, kill_users, survivors

TYPE_CHECKING = False  # typing is not imported at run time: the runner starts fast
if TYPE_CHECKING:
    from typing import Any

LISTEN, TIME_WAIT = "0A", "06"
SETTLE_S = 0.5  # how long killed processes' sockets may take to close


def _sockets() -> list[tuple[str, str]]:
    """(local port in hex, state in hex) of every TCP socket of the network namespace,
    and ("udp:<port>", "") for every UDP one."""
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{proto}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            port = cols[1].rsplit(":", 1)[1]
            found.append((port, cols[3]) if proto.startswith("tcp") else (f"udp:{port}", ""))
    return found


def _ipc_objects() -> list[str]:
    """System V shared memory, semaphores and message queues, and POSIX message queues."""
    found = []
    for kind in ("shm", "sem", "msg"):
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as f:
            found += [f"sysv {kind}"] * (len(f.read().splitlines()) - 1)
    with contextlib.suppress(OSError):
        found += [f"/dev/mqueue/{name}" for name in os.listdir("/dev/mqueue")]
    return found


def _ephemeral(port: str) -> bool:
    """Whether ``port`` (hex) is in the range the kernel picks clients' local ports from."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = map(int, f.read().split())
    except (OSError, ValueError):
        return False
    return low <= int(port, 16) <= high


def _open_sockets(listened: set[str]) -> list[str]:
    """The sockets a fresh container would not have, once they had ``SETTLE_S`` to close:
    any but a client's connection in TIME_WAIT (on an ephemeral port nothing listened
    on, which no server binds)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        left = [f"socket on port {int(port.split(':')[-1], 16)}"
                + (" in TIME_WAIT" if state == TIME_WAIT else "")
                for port, state in _sockets()
                if state != TIME_WAIT or port in listened or not _ephemeral(port)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def reset(places: list[list[Any]]) -> dict[str, Any]:
    """KILL the sandbox user's other processes, empty each ``[path, mode]`` of ``places``
    (mode: what the directory's mode must be, None to leave it), and say in ``dirty``
    what still makes the container differ from a fresh one."""
    listened = {port for port, state in _sockets() if state == LISTEN}
    kill_all()
    paths = tuple(path for path, _ in places)
    dirty = [f"process {pid} survived" for pid in survivors()]
    for path, mode in places:
        dirty += empty_dir(path, mode, skip=paths)
    dirty += _ipc_objects() + _open_sockets(listened)
    return {"dirty": dirty}


def sweep(uid: int, others: bool, keep: list[int], places: list[str], logs: str
          ) -> dict[str, Any]:  # fmt: skip
    """As root, after a privileged command: KILL what is left of ``uid``'s processes (with
    ``others``, of every user but root) but ``keep``; remove what another user or root
    left in each of ``places`` (the entries not owned by ``uid``); and with ``logs``,
    empty that folder and give it to root, open to every user (0777) again.  Raises
    OSError when an entry cannot be removed."""
    kill_users(uid, others, tuple(keep))
    for place in places:
        for entry in os.scandir(place):
            if entry.stat(follow_symlinks=False).st_uid != uid:
                _remove(entry)
    if logs:
        for entry in os.scandir(logs):
            _remove(entry)
        os.chown(logs, 0, 0)
        os.chmod(logs, 0o777)
    return {}


def _remove(entry: os.DirEntry[str]) -> None:
    """Remove a directory's entry: a directory with all it holds, anything else (a
    symlink to a directory too) unlinked."""
    import shutil

    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)
