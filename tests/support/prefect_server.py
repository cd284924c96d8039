"""A real Prefect API server in a subprocess (SQLite in a temp folder), for tests and
benchmarks that need a server other processes can reach."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flows.commands.api_server import stop_process, wait_healthy

PREFECT = str(Path(sys.executable).with_name("prefect"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    """The environment of a process that talks to the server (telemetry off)."""
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "DO_NOT_TRACK": "1", "PREFECT_LOGGING_LEVEL": "WARNING"}
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


@contextmanager
def prefect_server(home: Path, timeout_s: float = 180) -> Iterator[str]:
    """Start ``prefect server start`` on a free port; yields its API URL; stops it after."""
    home.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = server_env(home)
    api = f"http://127.0.0.1:{port}/api"
    env["PREFECT_API_DATABASE_CONNECTION_URL"] = f"sqlite+aiosqlite:///{home / 'prefect.db'}"
    env["PREFECT_UI_API_URL"] = api  # the UI's pages call this, not the default port 4200
    log = open(home / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port",
                             str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        if not wait_healthy(api, proc, timeout_s):
            raise RuntimeError(f"prefect server did not start: "
                               f"{(home / 'server.log').read_text()[-2000:]}")
        yield api
    finally:
        stop_process(proc, 30)
        log.close()
