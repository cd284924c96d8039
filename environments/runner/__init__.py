"""The in-container command runner: its modules, and how one is started in a container.

``protocol``, ``files``, ``procs``, ``pyfork`` and ``agent`` use the standard library only.
Nothing is copied into the image: ``launch_argv()`` is a one-line ``python3 -c`` bootstrap
that reads ``payload()`` from stdin (the modules' sources and a loader) and runs it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

MODULES = ("environments.runner.protocol", "environments.runner.files",
           "environments.runner.procs", "environments.runner.pyfork",
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


def launch_argv(reap_sessions: list[int] | tuple[int, ...] = ()) -> list[str]:
    """The argv that starts a runner; it first KILLs what is left of ``reap_sessions``."""
    return ["python3", "-I", "-S", "-c", BOOTSTRAP, *(str(s) for s in reap_sessions)]


@cache
def payload() -> bytes:
    """What the bootstrap reads from stdin: a length line, then a loader that registers
    the modules under their names (so their imports of each other resolve) and runs
    ``agent.main``."""
    here = Path(__file__).parent
    sources = [(name, (here / f"{name.rsplit('.', 1)[1]}.py").read_text()) for name in MODULES]
    loader = f"SOURCES = {sources!r}\n{_LOADER}".encode()
    return b"%d\n" % len(loader) + loader
