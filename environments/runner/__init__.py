"""The in-container command runner: its modules, and how one is started in a container.

``protocol``, ``files``, ``procs``, ``pyfork``, ``watch``, ``reset`` and ``agent`` use the
standard library only.
Nothing is copied into the image: ``launch_argv()`` is a one-line ``python3 -c`` bootstrap
that reads ``payload()`` from stdin (the modules' sources and a loader) and runs it. A
sandbox's first runner is its container's command (``container_argv()``); later ones, after
a runner died, are started with ``docker exec``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

MODULES = ("environments.runner.protocol", "environments.runner.files",
           "environments.runner.procs", "environments.runner.pyfork",
           "environments.runner.watch", "environments.runner.reset",
           "environments.runner.agent")  # dependency order

# The host sends nothing after the payload until the runner's hello, so the buffered read
# cannot swallow part of the first request.
BOOTSTRAP = "import sys; exec(sys.stdin.buffer.read(int(sys.stdin.buffer.readline())))"
_LOADER = """\
import sys
for name, source in SOURCES:
    m = sys.modules[name] = type(sys)(name)
    exec(compile(source, name, "exec"), m.__dict__)
m.main(sys.argv[1:])
"""


# The container's own command on the runner path: a runner on the container's stdin and
# stdout, started as the sandbox user (the shell itself runs as root, so a command that
# kills every process of the sandbox user -- ``kill -9 -1`` -- does not stop the
# container).  When it exits, the shell sends one last frame on the same stdout, after all
# the runner wrote -- ``{"exit": "NNN"}``, its status in three digits (the engine ends an
# attach stream only when the container stops) -- and the container lives on as `sleep`,
# detached from the stream, for a runner started by `docker exec`.
_EXIT_FRAME = r'\000\000\000\016\000\000\000\000{"exit":"%03d"}'
_MAIN_SH = f"\"$@\"; printf '{_EXIT_FRAME}' \"$?\"; exec sleep infinity </dev/null >/dev/null 2>&1"


def container_argv(user: str, home: str) -> list[str]:
    """The container command (run as root) whose first runner is the container's main
    process as ``user`` ("uid:gid") with ``HOME=home`` (saves the ``docker exec`` that
    would start it); see ``_MAIN_SH``.  ``setpriv`` (util-linux) drops root and every
    capability before the runner starts."""
    uid, _, gid = user.partition(":")
    drop = ["setpriv", f"--reuid={uid}", f"--regid={gid or uid}", "--clear-groups", "--",
            "env", f"HOME={home}"]
    return ["sh", "-c", _MAIN_SH, "sh", *drop, *launch_argv()]


def launch_argv(reap_sessions: list[int] | tuple[int, ...] = ()) -> list[str]:
    """The argv that starts a runner; it first KILLs what is left of ``reap_sessions``."""
    return ["python3", "-I", "-S", "-c", BOOTSTRAP, *(str(s) for s in reap_sessions)]


def sweep_argv(request: dict[str, object]) -> list[str]:
    """The argv of a runner that only makes ``request``'s sweep (the arguments of
    ``reset.sweep``) and exits; it reads ``payload()`` on stdin like any runner."""
    return ["python3", "-I", "-S", "-c", BOOTSTRAP, "sweep", json.dumps(request)]


@cache
def payload() -> bytes:
    """What the bootstrap reads from stdin: a length line, then a loader that registers
    the modules under their names (so their imports of each other resolve) and runs
    ``agent.main``."""
    here = Path(__file__).parent
    sources = [(name, (here / f"{name.rsplit('.', 1)[1]}.py").read_text()) for name in MODULES]
    loader = f"SOURCES = {sources!r}\n{_LOADER}".encode()
    return b"%d\n" % len(loader) + loader
