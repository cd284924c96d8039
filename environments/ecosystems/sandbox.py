"""A sandbox for a user's ecosystem code: each worker (``worker.py``) in a container of its
own, so a seed or sampler reaches nothing of the host.

The container runs the base image's ``python3`` as ``nobody`` (the folder's files must be
readable by others, as a shared folder's are), with:

- **no network** (``network_mode=none``) and **no Docker socket**, all capabilities
  dropped, ``no-new-privileges``, pids, memory and CPU limits, an init process;
- **read-only mounts only**: the ecosystem folder at ``/ecosystem/<name>``, ``worker.py``,
  and this interpreter's site-packages (so a seed may import Faker and the other locked
  dependencies; the project's own packages are not there), on a read-only root
  filesystem whose only writable place is a small in-memory ``/tmp``;
- stdin and stdout attached for :class:`ContainerChannel` (the worker's JSON frames);
  stderr — what the user's code prints — is dropped, never logged to the engine's disk.

Containers carry the labels ``taskfactory.usercode`` and ``taskfactory.owner_pid``; they
are removed when their worker is killed, exit when their stdin closes (the host process
ended, however), and the first sandbox a process opens removes those whose owner is gone.
"""

from __future__ import annotations

import contextlib
import os
import select
import sysconfig
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import LogConfig, Mount

from environments.docker.exec_path import StreamDemux, hijacked
from environments.ecosystems.usercode import WORKER, UserCodeError
from environments.processes import pid_alive

IMAGE = "taskfactory/base:bookworm"
"""The docker backend's base image (``environments.docker.config.DEFAULT_IMAGE``, which a
test keeps equal): named here, because the backend's modules import the ecosystems."""
USERCODE_LABEL = "taskfactory.usercode"
OWNER_LABEL = "taskfactory.owner_pid"
ROOT = "/ecosystem"
SITE = "/taskfactory/site"
NOBODY = "65534:65534"
LIMITS: dict[str, Any] = {"mem_limit": "2g", "memswap_limit": "2g", "pids_limit": 128,
                          "nano_cpus": 1_000_000_000}
"""Per worker: a seed's state is a few MB; a runaway one stops here."""
_reaped = threading.Event()


@cache
def _client() -> docker.APIClient:
    return docker.from_env(timeout=60).api


def _mounts(folder: Path, sites: list[str]) -> list[Mount]:
    return [Mount(f"{ROOT}/{folder.name}", str(folder), type="bind", read_only=True),
            Mount("/taskfactory/worker.py", str(WORKER), type="bind", read_only=True),
            *(Mount(f"{SITE}/{i}", site, type="bind", read_only=True)
              for i, site in enumerate(sites))]


def _create(api: docker.APIClient, folder: Path, modules: dict[str, str]) -> str:
    sites = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    host = api.create_host_config(
        network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges"],
        read_only=True, tmpfs={"/tmp": "size=256m,mode=1777"}, init=True, auto_remove=True,
        mounts=_mounts(folder, sites), log_config=LogConfig(type="none"), **LIMITS)
    return str(api.create_container(
        IMAGE, ["python3", "-s", "/taskfactory/worker.py", f"{ROOT}/{folder.name}",
                        repr(modules)],
        stdin_open=True, user=NOBODY,
        working_dir=f"{ROOT}/{folder.name}", host_config=host,
        environment={"PYTHONPATH": ":".join(f"{SITE}/{i}" for i in range(len(sites))),
                     "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
        labels={USERCODE_LABEL: folder.name, OWNER_LABEL: str(os.getpid())})["Id"])


def reap_dead(api: docker.APIClient) -> int:
    """Remove the sandboxes of processes that are gone; how many."""
    found = api.containers(all=True, filters={"label": USERCODE_LABEL})
    owners = {c["Id"]: (c.get("Labels") or {}).get(OWNER_LABEL, "") for c in found}
    dead = [c for c, pid in owners.items() if pid.isdigit() and not pid_alive(int(pid))]
    for container in dead:
        with contextlib.suppress(docker.errors.APIError):
            api.remove_container(container, force=True)
    return len(dead)


class ContainerChannel:
    """A worker for ``folder``'s ``modules`` in a new sandbox container; UserCodeError
    (what ``sandbox``) naming the fix when no engine or no base image is there."""

    def __init__(self, folder: Path, modules: dict[str, str]) -> None:
        self.id = ""
        try:
            self.api = _client()
            if not _reaped.is_set():
                _reaped.set()
                reap_dead(self.api)
            self.id = _create(self.api, folder, modules)
            raw = self.api.attach_socket(self.id, params={"stdin": 1, "stdout": 1,
                                                          "stream": 1})
            self._sock, self._close, early = hijacked(raw)
            self.api.start(self.id)
        except docker.errors.ImageNotFound:
            self.kill()
            raise UserCodeError("sandbox", f"the base image {IMAGE} is missing; build "
                                "it with `make image`") from None
        except (docker.errors.DockerException, OSError) as exc:
            self.kill()
            raise UserCodeError("sandbox", f"no Docker engine answers ({type(exc).__name__})"
                                "; start one with `make engine`") from None
        self._demux, self._out = StreamDemux(), bytearray()
        self._take(early)

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def read_exact(self, n: int, deadline: float) -> bytes:
        while len(self._out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._sock], [], [], left)[0]:
                raise TimeoutError
            chunk = self._sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self._take(chunk)
        data, self._out = bytes(self._out[:n]), self._out[n:]
        return data

    def kill(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            self._close()
        if self.id:
            with contextlib.suppress(docker.errors.DockerException, OSError):
                self.api.remove_container(self.id, force=True)

    def exit_code(self) -> int | None:
        try:
            state = self.api.inspect_container(self.id)["State"]
        except docker.errors.APIError:
            return None  # removed once it exited
        return None if state.get("Running") else int(state.get("ExitCode", -1))

    def _take(self, chunk: bytes) -> None:
        for stream, data in self._demux.feed(chunk):
            if stream == 1:
                self._out += data
