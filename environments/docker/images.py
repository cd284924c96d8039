"""Ecosystem images: ``FROM`` the local base tag, plus packages and support files.

An ecosystem without extra packages or support files runs on the base image itself.
Otherwise its image is built once (offline when no packages are needed), tagged by a
content digest of base image id + packages + support files, and reused while the tag
exists.  Support files land in ``/opt/taskfactory/<ecosystem>/`` (a stack's each in its
member's folder), owned by root.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from typing import TYPE_CHECKING, TypeVar

from environments.config import BackendConfig
from environments.ecosystems import Ecosystem
from environments.sandbox import SandboxUnavailableError

if TYPE_CHECKING:
    import docker

    from environments.docker.config import DockerConfig

_build_lock = threading.Lock()
D = TypeVar("D", bound="DockerConfig")
_built: dict[tuple[str, str, str, tuple[str, ...]], DockerConfig] = {}
"""(ecosystem, digest, base config, packages) -> the config of its image, once known."""
_failed: dict[str, str] = {}
"""Tags whose build failed in this process, and why: not retried (a build costs seconds)."""


def dockerfile(base: str, packages: list[str], support: bool) -> str:
    """The image's Dockerfile; with ``support``, the build context's ``support/`` folder
    (``<ecosystem>/<file>``, :meth:`Ecosystem.support_files`) goes to /opt/taskfactory/."""
    lines = [f"FROM {base}", "USER root"]
    if packages:
        lines.append("RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                     f"--no-install-recommends {' '.join(sorted(packages))} "
                     "&& rm -rf /var/lib/apt/lists/*")
    if support:
        lines.append("COPY support/ /opt/taskfactory/")
        lines.append("RUN chmod -R a+rX /opt/taskfactory")
    lines += ["USER 1000:1000", "WORKDIR /workspace"]
    return "\n".join(lines) + "\n"


def _context(text: str, files: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in {"Dockerfile": text.encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def ecosystem_image(eco: Ecosystem, config: D, extra_packages: tuple[str, ...] = ()) -> D:
    """The docker config with ``image`` set to the ecosystem's image (built if missing),
    with ``extra_packages`` installed on top of the ecosystem's own.

    Raises SandboxUnavailableError when the base image is missing or the build fails (for
    instance, a package the Debian archive does not have)."""
    packages = sorted({*eco.spec.image.packages, *extra_packages})
    if not packages and not eco.support_files():
        return config
    key = (eco.name, eco.digest, config.model_dump_json(), tuple(packages))
    with _build_lock:
        known = _built.get(key)
    if not isinstance(known, type(config)):
        known = _built[key] = _image(eco, config, packages)
    return known


def _image(eco: Ecosystem, config: D, packages: list[str]) -> D:
    import docker

    client = docker.from_env(timeout=600)
    try:
        return config.model_copy(update={"image": _build(client, eco, config.image, packages)})
    finally:
        client.close()


def _build(client: docker.DockerClient, eco: Ecosystem, base: str, packages: list[str]) -> str:
    """The tag of the ecosystem's image on ``base`` with ``packages``, built if missing."""
    import docker.errors

    try:
        base_id = str(client.images.get(base).id)
    except docker.errors.ImageNotFound as exc:
        raise SandboxUnavailableError(f"base image {base} is missing; build it with "
                                      "`make image`") from exc
    support = {f"support/{name}": data for name, data in eco.support_files().items()}
    text = dockerfile(base, packages, bool(support))
    digest = hashlib.sha256(base_id.encode() + text.encode())
    for name in sorted(support):
        digest.update(name.encode() + b"\0" + support[name])
    tag = f"taskfactory/eco-{eco.name}:{digest.hexdigest()[:12]}"
    with _build_lock:
        if tag in _failed:
            raise SandboxUnavailableError(f"cannot build the image of ecosystem {eco.name!r}: "
                                          f"{_failed[tag]} (an earlier build failed)")
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            try:
                client.images.build(fileobj=_context(text, support), custom_context=True,
                                    tag=tag, rm=True, forcerm=True, pull=False,
                                    network_mode="default" if packages else "none",
                                    labels={"taskfactory.image": "ecosystem"})
            except docker.errors.BuildError as exc:
                _failed[tag] = str(exc)[:300]
                raise SandboxUnavailableError(f"cannot build the image of ecosystem "
                                              f"{eco.name!r}: {exc}") from exc
    return tag


def image_id(config: BackendConfig) -> str | None:
    """The engine's id (``sha256:...``) of a docker backend's image; None for other backends."""
    tag = getattr(config, "image", None)
    if config.type != "docker" or not tag:
        return None
    import docker

    client = docker.from_env(timeout=30)
    try:
        found: str | None = client.images.get(tag).id
        return found
    finally:
        client.close()
