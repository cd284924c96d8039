"""The command runner inside a sandbox container: one long-lived process serves every verb.

Standard library only (Python >= 3.8); runs on the image's ``python3`` as the sandbox
user under the container's limits. The host starts it with one ``docker exec -i`` (see
``environments.runner`` for the bootstrap) and speaks ``protocol`` frames over that
exec's stdin/stdout.

Commands run in their own process group inside the runner's session, with the runner's
environment (what ``docker exec`` gives) plus ``env``. Past ``timeout`` the group gets
TERM (and CONT), then KILL after ``KILL_GRACE_S``: exit 124, or 137 when KILL was needed,
and ``timed_out``; then every process the command started elsewhere (``setsid``, double
forks) is KILLed too (``procs.kill_strays``: by the ``TF_EXEC_ID`` every command inherits,
and every process started since that carries none).  When the command exits in time, what
is left in its group is KILLed; a process that called ``setsid`` (a service) survives.
Only the last ``cap`` bytes of each stream are kept, so large output never leaves the
container. A missing command exits 127, an
unexecutable one or a missing ``cwd`` 126, one that cannot be started at all (no process
or thread left under the pids limit) 125. ``python3 - ARGS`` with a script on stdin runs
in a fork of the runner instead of a new interpreter (``pyfork``: same contract, a few
ms instead of ~30).

At stdin EOF the runner KILLs the groups of its running commands and exits. Its
arguments are session ids of earlier runners of the container: their leftover groups are
KILLed before the hello, since a runner that died leaves its commands behind.  With the
arguments ``sweep JSON`` it serves nothing: it makes the one ``reset.sweep`` they name
(the root cleanup where no runner can be started) and exits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time

from environments.runner.files import (
    FileOpError,
    copy_tree,
    read_file,
    restore_tree,
    write_files,
)
from environments.runner.procs import (
    MARKER,
    boot_ticks,
    exec_environment,
    has_exited,
    kill_strays,
    open_pidfd,
    reap_sessions,
    signal_group,
)
from environments.runner.protocol import FrameReader, encode_frame
from environments.runner.pyfork import preload, python_stdin_args, spawn_python
from environments.runner.reset import reset, sweep
from environments.runner.watch import CHUNK, Watch

TYPE_CHECKING = False  # typing is not imported at run time: the runner starts fast
if TYPE_CHECKING:
    from typing import Any

    from environments.runner.watch import Process

KILL_GRACE_S = 2.0  # TERM -> KILL on timeout, like `timeout -k 2`
DRAIN_S = 1.0  # after exit, how long pipes held open by setsid'd processes are read
STUCK_S = 5.0  # after KILL, how long to wait for an exit that does not come (D state)
_NEW_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}


def _failed(code: int, message: str) -> tuple[dict[str, Any], bytes]:
    return {"code": code, "timed_out": False, "truncated": False, "out": 0}, message.encode()


class Runner:
    """Serves requests read from fd 0, answers on fd 1 (see the module docstring)."""

    def __init__(self) -> None:
        self.base_env = exec_environment()
        self._send_lock = threading.Lock()
        self._groups_lock = threading.Lock()
        self._groups: set[int] = set()  # process groups of running commands

    def send(self, header: dict[str, Any], blob: bytes = b"") -> None:
        data = memoryview(encode_frame(header, blob))
        with self._send_lock:
            try:
                while data:
                    data = data[os.write(1, data) :]
            except OSError:  # the host is gone: stdin EOF follows, main() cleans up
                pass

    def serve(self) -> None:
        reader = FrameReader()
        while True:
            data = os.read(0, CHUNK)
            if not data:
                break
            for header, blob in reader.feed(data):
                self.dispatch(header, blob)
        with self._groups_lock:
            for pgid in self._groups:
                signal_group(pgid, signal.SIGKILL)

    def dispatch(self, req: dict[str, Any], blob: bytes) -> None:
        """Answer ``req`` from a thread of its own (inline if none can be started)."""
        answer = self.answer_exec if req.get("op") == "exec" else self.answer_file_op
        try:
            threading.Thread(target=answer, args=(req, blob), daemon=True).start()
        except RuntimeError as e:  # no thread left: the pids limit is reached
            if answer == self.answer_file_op:
                return answer(req, blob)
            header, out = _failed(125, f"tf-runner: cannot start the command: {e}\n")
            self.send({"id": req.get("id"), **header}, out)

    def answer_file_op(self, req: dict[str, Any], blob: bytes) -> None:
        op, out = req.get("op"), b""
        try:
            if op == "read":
                header, out = {}, read_file(req["path"], int(req["max"]))
            elif op == "write":
                header = write_files(req["files"], blob)
            elif op in ("snapshot", "restore"):
                header = (copy_tree if op == "snapshot" else restore_tree)(req["src"], req["dst"])
            elif op == "reset":
                header = reset(req["places"])
            elif op == "sweep":
                header = sweep(int(req["uid"]), bool(req["others"]), list(req["keep"]),
                               list(req["places"]), str(req["logs"]))
            else:
                header = {"error": "failed", "message": f"unknown op {op!r}"}
        except FileOpError as e:
            header = {"error": e.kind, "message": str(e)}
        except Exception as e:  # every request gets its answer
            header = {"error": "failed", "message": f"{type(e).__name__}: {e}"}
        self.send({"id": req.get("id"), **header}, out)

    def answer_exec(self, req: dict[str, Any], stdin: bytes) -> None:
        try:
            header, blob = self.run(req, stdin)
        except Exception as e:  # every request gets its answer
            header, blob = _failed(125, f"tf-runner: {type(e).__name__}: {e}\n")
        self.send({"id": req["id"], **header}, blob)

    def run(self, req: dict[str, Any], stdin: bytes) -> tuple[dict[str, Any], bytes]:
        argv, cwd = [str(a) for a in req["argv"]], str(req["cwd"])
        marker, since = f"{os.getpid()}-{req['id']}", boot_ticks()
        env = {**self.base_env, "PWD": cwd, **(req.get("env") or {}),  # PWD, as a shell does
               MARKER: marker}
        if not os.path.isdir(cwd):
            return _failed(126, f'chdir to cwd ("{cwd}") failed: no such directory\n')
        proc: Process
        try:
            script_args = python_stdin_args(argv, bool(req.get("stdin")))
            if script_args is not None:
                proc = spawn_python(stdin, script_args, cwd, env)
                with self._groups_lock:
                    self._groups.add(proc.pid)
                stdin = b""  # the script, not the script's input
            else:
                proc = self.spawn(argv, cwd, env, bool(req.get("stdin")))
        except OSError as e:
            why = e.strerror or str(e)
            if e.filename == cwd and e.filename != argv[0]:
                return _failed(126, f'chdir to cwd ("{cwd}") failed: {why}\n')
            if e.filename is not None and e.filename == argv[0]:
                code = 127 if e.errno == errno.ENOENT else 126
                return _failed(code, f"tf-runner: failed to run command '{argv[0]}': {why}\n")
            return _failed(125, f"tf-runner: cannot start the command: {why}\n")
        header, blob = self.supervise(proc, stdin, float(req["timeout"]), int(req["cap"]))
        if header["timed_out"]:
            kill_strays(marker, since, first_pid=proc.pid)
        return header, blob

    def spawn(self, argv: list[str], cwd: str, env: dict[str, str], with_stdin: bool
              ) -> subprocess.Popen[bytes]:  # fmt: skip
        pipe = subprocess.PIPE
        kw: dict[str, Any] = dict(
            cwd=cwd, env=env, stdin=pipe if with_stdin else subprocess.DEVNULL, stdout=pipe,
            stderr=pipe, **_NEW_GROUP)
        try:
            proc = subprocess.Popen(argv, **kw)
        except OSError as e:  # like execvp: a file without a #! line is a shell script
            if e.errno != errno.ENOEXEC:
                raise
            proc = subprocess.Popen(["/bin/sh", "-c", 'exec "$0" "$@"', *argv], **kw)
        with self._groups_lock:
            self._groups.add(proc.pid)
        return proc

    def supervise(self, proc: Process, stdin: bytes, timeout: float, cap: int
                  ) -> tuple[dict[str, Any], bytes]:  # fmt: skip
        """Wait for ``proc``, feeding stdin, keeping output tails, enforcing the timeout."""
        pid, pidfd = proc.pid, open_pidfd(proc.pid)
        watch = Watch(proc, stdin, cap, pidfd)
        deadline = time.monotonic() + timeout
        exited = termed = killed = None
        while True:
            now = time.monotonic()
            if exited is None:
                if termed is None and now >= deadline:
                    signal_group(pid, signal.SIGTERM)
                    signal_group(pid, signal.SIGCONT)
                    termed = now
                elif termed is not None and killed is None and now >= termed + KILL_GRACE_S:
                    signal_group(pid, signal.SIGKILL)
                    killed = now
                elif killed is not None and now >= killed + STUCK_S:
                    break
                wake = (deadline if termed is None else termed + KILL_GRACE_S if killed is None
                        else killed + STUCK_S)  # fmt: skip
                if pidfd is None:
                    wake = min(wake, now + 0.02)
            else:
                wake = exited + DRAIN_S
                if not watch.reading or now >= wake:
                    break
            watch.pump(wake - now)
            if exited is None and has_exited(pid):
                exited = time.monotonic()
                with self._groups_lock:  # still unreaped, so the pgid cannot be reused yet
                    signal_group(pid, signal.SIGKILL)
                    self._groups.discard(pid)
                watch.exited()
        watch.close()
        if exited is None:  # stuck past KILL: answer anyway
            with self._groups_lock:
                self._groups.discard(pid)
        return _verdict(proc, watch, exited is not None, termed is not None,
                        killed is not None, cap)


def _verdict(proc: Process, watch: Watch, exited: bool, termed: bool, killed: bool, cap: int
             ) -> tuple[dict[str, Any], bytes]:  # fmt: skip
    """The answer to an exec: exit code, timed out or not, and the kept output."""
    if not exited:
        code = 137
    elif termed:
        proc.wait()
        code = 124 if not killed else 137
    else:
        rc = proc.wait()
        code = 128 - rc if rc < 0 else rc
    out, err = watch.out, watch.err
    header = {"code": code, "timed_out": termed,
              "truncated": out.total > cap or err.total > cap, "out": len(out.value())}
    return header, out.value() + err.value()


def main(args: list[str]) -> None:
    if args[:1] == ["sweep"]:  # one sweep, then exit (``environments.runner.sweep_argv``)
        sweep(**json.loads(args[1]))
        return
    threading.stack_size(1 << 19)
    os.chdir("/")
    if os.getsid(0) != os.getpid():  # `docker exec` makes us a session leader already
        with contextlib.suppress(OSError):
            os.setsid()
    reap_sessions({int(a) for a in args if a.isdigit()})
    preload()
    runner = Runner()  # sid None: not a session leader, so no one may reap our session
    sid = os.getpid() if os.getsid(0) == os.getpid() else None
    runner.send({"id": 0, "hello": {"pid": os.getpid(), "sid": sid,
                                    "python": sys.version.split()[0]}})  # fmt: skip
    runner.serve()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
