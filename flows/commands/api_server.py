"""The temporary Prefect API server of a ``taskfactory run``, in a session of its own.

Prefect starts its ephemeral server (``SubprocessASGIServer``) as a child in the
caller's process group, so Ctrl-C in a terminal — SIGINT to the whole group — kills the
server together with the run, and the run, unable to report its state, ends in an httpx
traceback a minute later.  :class:`TemporaryServer` starts the same server (uvicorn
serving ``prefect.server.api.server:create_app``, the UI off, Prefect's ephemeral
settings) in a new session, out of reach of the terminal's signals, and points
``PREFECT_API_URL`` at it before Prefect is imported.  The run stops it when it ends,
however it ends; a run killed outright takes it along (the kernel sends it SIGTERM when
its parent dies).  Imports nothing of Prefect.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def quiet_prefect() -> None:
    """Prefect's settings for a command that runs a flow, set before Prefect is imported
    (unless the environment sets them): no telemetry, warnings only, and time for the
    temporary server to start."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # the temporary server takes 15-30 s here, longer on a loaded machine (default: 20 s)
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ServerError(Exception):
    """The server did not answer in time; ``str()`` says so in one line (and names the fix)."""


class TemporaryServer:
    """``start()`` launches the server and sets ``PREFECT_API_URL``; ``wait_ready()``
    waits for its health check (start-up overlaps the caller's imports); ``stop()``."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.proc: subprocess.Popen | None = None
        self.log = Path(tempfile.gettempdir()) / f"taskfactory-prefect-{os.getpid()}.log"

    def start(self) -> TemporaryServer:
        spec = importlib.util.find_spec("prefect")
        assert spec is not None and spec.submodule_search_locations
        app_dir = str(Path(spec.submodule_search_locations[0]).parent)
        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
               "PREFECT__SERVER_FINAL": "1"}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory",
                 "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port",
                 str(self.port), "--log-level", "error", "--lifespan", "on"],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent)
        os.environ["PREFECT_API_URL"] = self.api_url
        return self

    def wait_ready(self, timeout_s: float) -> None:
        """Return once the server answers its health check; ServerError after
        ``timeout_s`` or when it exited."""
        assert self.proc is not None
        if not wait_healthy(self.api_url, self.proc, timeout_s):
            why = (f"exited with code {self.proc.returncode}" if self.proc.poll() is not None
                   else f"did not answer within {timeout_s:.0f} s")
            self.stop()
            raise ServerError(f"the temporary Prefect API server {why} (its log: "
                              f"{self.log}); set PREFECT_API_URL to a running server")

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s). Idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        stop_process(proc, 10)
        if proc.returncode in (0, -signal.SIGTERM):
            self.log.unlink(missing_ok=True)


def stop_process(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM ``proc``, SIGKILL it after ``grace_s``, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_healthy(api_url: str, proc: subprocess.Popen, timeout_s: float) -> bool:
    """True once ``GET <api_url>/health`` answers 200; False when ``proc`` (the server)
    exited or ``timeout_s`` passed first."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError), \
                urllib.request.urlopen(f"{api_url}/health", timeout=2) as r:
            if r.status == 200:
                return True
        time.sleep(0.2)
    return False


def start_temporary_server() -> TemporaryServer:
    """A started :class:`TemporaryServer`, stopped when this process exits."""
    server = TemporaryServer().start()
    atexit.register(server.stop)
    return server


def server_unless_configured() -> TemporaryServer | None:
    """None when ``PREFECT_API_URL`` names a server; else a started temporary one, said
    on stderr with how to use a running server instead."""
    if os.environ.get("PREFECT_API_URL"):
        return None
    print("prefect: no PREFECT_API_URL set, starting a temporary local API server "
          "(set PREFECT_API_URL to use a running server)", file=sys.stderr)
    return start_temporary_server()  # in its own session: Ctrl-C is ours to handle
