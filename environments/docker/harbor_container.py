"""A container started from an exported Harbor task image, driven the way Harbor drives it.

Harbor's docker environment runs the image with its own entrypoint and the command
``sh -c "sleep infinity"``, then works through ``exec`` (``bash -c <command>``, as a
chosen user) and file uploads (tar streams owned by root).  This wrapper does the same
with the docker SDK: Docker's default capabilities and no ``no-new-privileges`` (as
Harbor's compose project gets them: a verifier running as root must be able to read what
the agent's user left with mode 0600), no network, and the task's CPU and memory limits.
Every container carries the label ``taskfactory.harbor-check=<run>`` (``check-<pid>``) so
an interrupted check can remove what it started, and a later check what a killed one left.
This is the second driver of the engine beside the sandbox backend
(:mod:`environments.docker.backend`); ``check-harbor`` and the gate's tests use it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docker import DockerClient

CHECK_LABEL = "taskfactory.harbor-check"
CONTAINER_COMMAND = ["sh", "-c", "sleep infinity"]


class ContainerError(RuntimeError):
    """The engine could not start or drive the container."""


@dataclass(frozen=True)
class Done:
    exit_code: int
    output: str


def tar_of(files: dict[str, tuple[bytes, int]], uid: int = 0, gid: int = 0) -> bytes:
    """A tar of ``files`` (relative path -> (bytes, mode)) with their parent folders."""
    buf, seen, now = io.BytesIO(), set(), int(time.time())
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, (data, mode) in sorted(files.items()):
            parts = rel.split("/")
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder not in seen:
                    seen.add(folder)
                    info = tarfile.TarInfo(folder)
                    info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, uid, gid
                    info.mtime = now
                    tar.addfile(info)
            info = tarfile.TarInfo(rel)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, gid, now
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class TaskContainer:
    """One running container of an exported task's image (a context manager)."""

    def __init__(self, client: DockerClient, image: str, *, cpus: float, memory_mb: int,
                 run: str) -> None:
        import docker.errors

        self._client = client
        try:
            container = client.containers.create(
                image, command=CONTAINER_COMMAND, network_mode="none",
                nano_cpus=int(cpus * 1e9), mem_limit=f"{memory_mb}m",
                memswap_limit=f"{memory_mb}m", pids_limit=1024,
                labels={CHECK_LABEL: run, "taskfactory.owner_pid": str(os.getpid())})
            self.id: str = container.id or ""
            container.start()
        except docker.errors.DockerException as exc:
            if getattr(self, "id", None):
                self.close()
            raise ContainerError(f"cannot start a container of {image}: {exc}") from exc

    def __enter__(self) -> TaskContainer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def exec(self, command: str, *, user: str, timeout: float, workdir: str | None = None,
             env: dict[str, str] | None = None) -> Done:
        """``bash -c command`` as ``user`` (``""``: the image's user), killed with its
        process group after ``timeout`` seconds (exit 124)."""
        import docker.errors

        argv = ["timeout", "-k", "5", f"{timeout:.0f}s", "bash", "-c", command]
        api = self._client.api
        try:
            exec_id = api.exec_create(self.id, argv, user=user, workdir=workdir,
                                      environment=env)["Id"]
            output = api.exec_start(exec_id)
            code = api.exec_inspect(exec_id).get("ExitCode")
        except docker.errors.DockerException as exc:
            raise ContainerError(f"exec failed in container {self.id[:12]}: {exc}") from exc
        text = output.decode("utf-8", errors="replace") if output else ""
        return Done(-1 if code is None else int(code), text)

    def put(self, folder: str, files: dict[str, tuple[bytes, int]], uid: int = 0,
            gid: int = 0) -> None:
        """Extract ``files`` under ``folder`` (created first, as root)."""
        import docker.errors

        made = self.exec(f"mkdir -p {folder}", user="root", timeout=30)
        if made.exit_code != 0:
            raise ContainerError(f"cannot create {folder}: {made.output.strip()}")
        try:
            ok = self._client.api.put_archive(self.id, folder, tar_of(files, uid, gid))
        except docker.errors.DockerException as exc:
            raise ContainerError(f"upload to {folder} failed: {exc}") from exc
        if not ok:
            raise ContainerError(f"upload to {folder} failed")

    def read(self, path: str) -> bytes | None:
        """The bytes of a regular file, or None when there is none at ``path``."""
        import docker.errors

        try:
            stream, _ = self._client.api.get_archive(self.id, path)
        except docker.errors.NotFound:
            return None
        except docker.errors.DockerException as exc:
            raise ContainerError(f"cannot read {path}: {exc}") from exc
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            f = tar.extractfile(member) if member is not None and member.isfile() else None
            return f.read() if f is not None else None

    def close(self) -> None:
        _remove_container(self._client, self.id)


def _remove_container(client: DockerClient, container_id: str) -> None:
    """Force-remove a container.  One already gone, or whose removal is already in progress
    (a worker closing its own container while an interrupt removes the run's), counts as
    removed."""
    import docker.errors

    from environments.docker.faults import removal_in_progress

    try:
        client.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if not removal_in_progress(exc):
            raise


def remove_labelled(client: DockerClient, run: str) -> int:
    """Remove every container of check run ``run``; how many there were."""
    found = client.api.containers(all=True, filters={"label": f"{CHECK_LABEL}={run}"})
    for c in found:
        _remove_container(client, c["Id"])
    return len(found)


def remove_run(client: DockerClient, run: str) -> int:
    """Remove every container and image of check run ``run``; how many there were."""
    import docker.errors

    removed = remove_labelled(client, run)
    for image in client.api.images(filters={"label": f"{CHECK_LABEL}={run}"}):
        with contextlib.suppress(docker.errors.APIError):  # NotFound included
            client.api.remove_image(image["Id"], force=True)
            removed += 1
    return removed


def sweep_stale(client: DockerClient) -> int:
    """Remove the containers and images of check runs whose process is gone (a check that
    was killed cannot clean up after itself); how many were removed."""
    from environments.docker.backend import owner_dead

    found = [*client.api.containers(all=True, filters={"label": CHECK_LABEL}),
             *client.api.images(filters={"label": CHECK_LABEL})]
    runs = {(item.get("Labels") or {}).get(CHECK_LABEL, "") for item in found}
    return sum(remove_run(client, run) for run in sorted(runs)
               if run.startswith("check-") and owner_dead(run.removeprefix("check-")))


def engine_client(timeout: int = 900) -> DockerClient:
    """A client of the Docker engine; ContainerError when none answers (or no SDK)."""
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # no SDK, no daemon
        raise ContainerError(str(exc)) from None
    return client


def build_image(client: DockerClient, context: Path, tag: str, timeout: float,
                run: str) -> None:
    """``docker build <context>`` with the engine's classic builder; never pulls.  The
    image is labelled with the check run, which removes it when done; ContainerError
    with the build log's tail when the build fails."""
    import docker.errors

    try:
        client.images.build(path=str(context), tag=tag, rm=True, forcerm=True,
                            pull=False, timeout=int(timeout), labels={CHECK_LABEL: run})
    except docker.errors.BuildError as exc:
        log = "".join(str(e.get("stream") or e.get("error") or "") for e in exc.build_log)
        raise ContainerError(f"image build failed: {exc}: {log.strip()[-400:]}") from exc
