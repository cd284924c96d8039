"""A Docker engine of a test's own, so that a test may stop it without touching the engine
other tests (and people) use.

A second ``dockerd`` with its own socket, data root, exec root, pid file and network
namespace, no iptables and no bridge (sandboxes run with no network), storing images on
overlay2 like the main one.  The base image is imported from the cached rootfs by
``environments/engine/build-base-image.sh``, as on a fresh machine.  Needs root and the
cached rootfs tarball; :func:`unavailable` says why not when either is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors

ROOT = Path(__file__).resolve().parents[2]
BASE_TAR = Path(os.environ.get("TASKFACTORY_CACHE_DIR", "/var/cache/taskfactory")) \
    / "base-bookworm.tar"


def unavailable() -> str | None:
    """Why no private engine can be started here, or None."""
    if os.geteuid() != 0:
        return "a second dockerd needs root"
    if shutil.which("dockerd") is None:
        return "dockerd is not installed"
    if not BASE_TAR.is_file():
        return f"no cached base rootfs at {BASE_TAR} (run `make image` once)"
    return None


class PrivateEngine:
    """``start()``, ``stop()`` (graceful: the engine stops its containers, as a restart
    does), ``host`` for ``DOCKER_HOST``; ``close()`` stops it and removes its folders."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.host = f"unix://{folder}/docker.sock"
        self.pidfile = folder / "docker.pid"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host}

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.host, timeout=30)

    def answers(self) -> bool:
        try:
            client = self.client()
        except docker.errors.DockerException:
            return False
        try:
            return bool(client.ping())
        except docker.errors.DockerException:
            return False
        finally:
            client.close()

    def start(self, timeout_s: float = 60) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._clear_stale_pidfile()
        log = open(self.folder / "dockerd.log", "ab")  # noqa: SIM115 - the daemon holds it
        # In a network namespace of its own: with --bridge=none, dockerd deletes a host
        # link named docker0 on start, which is the main engine's bridge.
        self.proc = subprocess.Popen(
            ["unshare", "--net", "dockerd", "--host", self.host,
             "--data-root", str(self.folder / "data"),
             "--exec-root", str(self.folder / "exec"), "--pidfile", str(self.pidfile),
             "--iptables=false", "--ip-masq=false", "--bridge=none",
             "--storage-driver=overlay2"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout_s
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the private dockerd did not start: "
                                   + (self.folder / "dockerd.log").read_text()[-2000:])
            time.sleep(0.2)

    def stop(self, timeout_s: float = 60) -> None:
        """Stop the engine the way a restart does (SIGTERM: it stops its containers and
        its containerd); SIGKILL after ``timeout_s``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._kill_containerd()

    def import_base_image(self) -> None:
        subprocess.run(["bash", str(ROOT / "environments/engine/build-base-image.sh")],
                       env=self.env(), check=True, capture_output=True)

    def close(self) -> None:
        self.stop()
        for mount in self._mounts():  # what a killed engine left mounted
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _clear_stale_pidfile(self) -> None:
        """A dockerd killed abruptly leaves its pid file (and maybe a dying process)."""
        _kill_named(self.pidfile, "dockerd")
        self._kill_containerd()

    def _kill_containerd(self) -> None:
        _kill_named(self.folder / "exec" / "containerd" / "containerd.pid", "containerd")

    def _mounts(self) -> list[str]:
        prefix = str(self.folder) + "/"
        with open("/proc/self/mounts") as f:
            found = [line.split()[1] for line in f if line.split()[1].startswith(prefix)]
        return sorted(found, key=len, reverse=True)


def _kill_named(pidfile: Path, name: str) -> None:
    """SIGKILL the process ``pidfile`` names, if it is still ``name`` (the pid may have been
    reused), wait until it is gone, and remove the pid file."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pidfile.read_text().strip())
        if Path(f"/proc/{pid}/comm").read_text().strip() == name:
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                os.kill(pid, 0)  # ProcessLookupError (an OSError) once it is gone
                time.sleep(0.1)
    pidfile.unlink(missing_ok=True)


@contextlib.contextmanager
def private_engine() -> Iterator[PrivateEngine]:
    """A started private engine with the base image; stopped and removed afterwards.
    Skips the test (loudly) where none can be started."""
    import pytest

    why = unavailable()
    if why and os.environ.get("TASKFACTORY_REQUIRE_DOCKER") == "1":
        pytest.fail(f"no private Docker engine: {why} (TASKFACTORY_REQUIRE_DOCKER=1: failing)",
                    pytrace=False)
    if why:
        pytest.skip(f"!!! no private Docker engine: {why} -- engine-outage test NOT run !!!")
    engine = PrivateEngine(Path(f"/tmp/tf-test-engine-{os.getpid()}-{uuid.uuid4().hex[:6]}"))
    try:
        engine.start()
        engine.import_base_image()
        yield engine
    finally:
        engine.close()
