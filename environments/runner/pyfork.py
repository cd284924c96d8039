"""``python3 -`` without a new interpreter: the runner forks itself to run the script.

Standard library only. Probes and verifiers arrive as ``python3 - ARGS`` with the script
on stdin; a fresh interpreter spends most of its ~30 ms on start-up and imports. The
runner has already paid both (it imports ``PRELOADED`` once), so a fork of it runs the
script in a few ms. The child is what ``python3 -`` would be, with these differences:
the runner's flags (``-I -S``: no user or site packages, no ``''`` on ``sys.path``), the
preloaded modules already imported, and ``atexit`` handlers not run. Like ``python3 -``
after reading its script, the child's stdin is at EOF. Exit codes follow Python's: the
``SystemExit`` code (a message goes to stderr and exits 1), 1 after an uncaught
exception (its traceback on stderr), 120 when flushing stdout fails.

The runner is multi-threaded; the child only runs the script, never the runner's code,
and gets its own fds 0-2 and no other inherited descriptor.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

PRELOADED = ("argparse", "base64", "collections", "contextlib", "csv", "errno", "hashlib",
             "io", "json", "re", "resource", "select", "shutil", "signal", "sqlite3", "stat",
             "subprocess", "tempfile", "time", "traceback", "types")
"""Every standard module a rendered verifier, its seal and a built-in probe import (a test
keeps it so): imported in a fork, each would cost the child its import every run."""
COMPILED_KEPT = 32
"""Scripts whose compiled code the runner keeps: a task's verifier and its ecosystem's
probe run a dozen times each, and compiling a verifier costs a few ms every time."""

_compiled: dict[bytes, object] = {}
_compiled_lock = threading.Lock()


def preload() -> None:
    """Import what probes and verifiers import, once, before any request is served."""
    for name in PRELOADED:
        __import__(name)


def python_stdin_args(argv: list[str], with_stdin: bool) -> list[str] | None:
    """The script's arguments when ``argv`` is ``python3 [-I] [-S] - [ARGS]`` with a script
    on stdin (the requests forked here: the runner already runs with ``-I -S``), else
    None."""
    if not with_stdin or not argv or argv[0] != "python3":
        return None
    rest = argv[1:]
    while rest[:1] in (["-I"], ["-S"]):
        rest = rest[1:]
    return rest[1:] if rest[:1] == ["-"] else None


class Forked:
    """The parent's handle on a forked script, shaped like the ``subprocess.Popen`` the
    runner supervises (``pid``, ``stdin`` None, ``stdout``/``stderr`` pipes, ``wait``)."""

    stdin = None

    def __init__(self, pid: int, out_fd: int, err_fd: int) -> None:
        self.pid = pid
        self.stdout = os.fdopen(out_fd, "rb", buffering=0)
        self.stderr = os.fdopen(err_fd, "rb", buffering=0)
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def _code(source: bytes) -> object:
    """``source`` compiled as the child would compile it, from the runner's last
    ``COMPILED_KEPT`` scripts; None when it does not compile (the child then compiles it
    again, and reports the error as ``python3 -`` would)."""
    with _compiled_lock:
        code = _compiled.pop(source, None)
    if code is None:
        try:
            code = compile(source, "<stdin>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None
    with _compiled_lock:
        while len(_compiled) >= COMPILED_KEPT:
            _compiled.pop(next(iter(_compiled)))
        _compiled[source] = code  # the most recent last
    return code


def spawn_python(source: bytes, args: list[str], cwd: str, env: dict[str, str]) -> Forked:
    """Fork a child in its own process group that runs ``source`` as ``__main__``."""
    code = _code(source)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        status = 1
        try:
            status = _child(code or source, args, cwd, env, out_w, err_w)
        finally:
            os._exit(status)
    os.close(out_w)
    os.close(err_w)
    # also here, so that a group signal sent right after fork reaches the child (which
    # may have done it already, or exited)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return Forked(pid, out_r, err_r)


def _child(source: object, args: list[str], cwd: str, env: dict[str, str], out_w: int,
           err_w: int) -> int:
    """Run ``source`` (bytes, or the code compiled from them) as the script."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((null, 0), (out_w, 1), (err_w, 2)):
        os.dup2(fd, target)
    os.closerange(3, _max_fd())
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                      buffering=1, closefd=False)
    sys.argv = ["-", *args]
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__file__": "<stdin>"})
    sys.modules["__main__"] = main
    code = 0
    try:
        script = (compile(source, "<stdin>", "exec", dont_inherit=True)
                  if isinstance(source, bytes) else source)
        exec(script, main.__dict__)  # type: ignore[arg-type]
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException as e:
        import traceback

        tb = e.__traceback__
        traceback.print_exception(type(e), e, tb.tb_next if tb else None)  # the script's
        code = 1
    try:
        sys.stdout.flush()
    except Exception:
        code = 120
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 1 << 16
