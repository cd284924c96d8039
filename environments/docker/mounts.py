"""Where a sandbox container may write, each place an in-memory filesystem with a cap.

The workdir (``DockerConfig.workdir_mb``) and the snapshots of it (capped at
``memory_mb``) are in memory; so are the other places the sandbox user may write in the
base image — ``/tmp``, ``/var/tmp``, ``/run/lock`` and its home — each capped at
``DockerConfig.tmp_mb``.  With all of them in memory the root filesystem is mounted
read-only, so nothing a command writes reaches the engine's disk: a full place fails
with ENOSPC, any other path with EROFS.  Their pages count against ``memory_mb``.

Each is a tmpfs-backed anonymous volume, not a plain tmpfs mount, because the engine's
archive calls (the ``write_files`` fallback, ``docker-exec`` mode) see volumes but not
tmpfs mounts; the container's removal (``v=True``) removes them.  The snapshots are a
plain tmpfs mount (only the in-container runner or shell touches them), nested in
``/tmp``.  The home starts empty: the image's dotfiles under it are not copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from docker.types import DriverConfig, Mount

if TYPE_CHECKING:
    from environments.docker.config import DockerConfig

SNAP_ROOT = "/tmp/.tf-snap"
SHARED_DIRS = ("/tmp", "/var/tmp", "/run/lock")
"""World-writable (sticky) places of the base image, besides the sandbox user's home."""


class Scratch(NamedTuple):
    """The ``mounts``, ``tmpfs`` and ``read_only`` arguments of a container's creation."""

    mounts: list[Mount]
    tmpfs: dict[str, str]
    read_only: bool


def scratch_mounts(cfg: DockerConfig) -> Scratch:
    """The in-memory places of a sandbox container (see the module docstring); places
    owned by a numeric sandbox user (else world-writable, sticky).  ``workdir_mb=0``
    keeps the workdir and snapshots on the disk layer, ``tmp_mb=0`` the other places;
    either leaves the root filesystem writable."""
    uid, _, gid = cfg.user.partition(":")
    gid = gid or uid
    owner = f"uid={uid},gid={gid}" if uid.isdigit() and gid.isdigit() else ""

    def opts(mb: int, mode: str, owned: bool = True) -> str:
        mine = owned and owner
        return ",".join(filter(None, [f"size={mb}m", "nosuid", "nodev", mine if mine else "",
                                      f"mode={mode if mine else '1777'}"]))

    def volume(target: str, mb: int, mode: str, owned: bool = True) -> Mount:
        return Mount(target, None, type="volume", driver_config=DriverConfig(
            "local", {"type": "tmpfs", "device": "tmpfs", "o": opts(mb, mode, owned)}))

    mounts: list[Mount] = []
    tmpfs: dict[str, str] = {}
    if cfg.workdir_mb:
        mounts.append(volume(cfg.workdir, cfg.workdir_mb, "0755"))
        tmpfs[SNAP_ROOT] = opts(cfg.memory_mb, "0700")
    if cfg.tmp_mb:
        mounts += [volume(d, cfg.tmp_mb, "1777", owned=False) for d in SHARED_DIRS]
        if cfg.home:
            mounts.append(volume(cfg.home, cfg.tmp_mb, "0755"))
    if cfg.logs_dir:
        tmpfs[cfg.logs_dir] = "size=16m,nosuid,nodev,mode=0777"
    return Scratch(mounts, tmpfs, read_only=bool(cfg.workdir_mb and cfg.tmp_mb))


def reset_places(cfg: DockerConfig) -> list[tuple[str, int | None]] | None:
    """The places a reset empties before the container serves another sandbox (path, and
    the mode the directory must have, or None where the sandbox user does not own it);
    None when the root filesystem is writable (then nothing short of a new container is
    known to be clean)."""
    if not scratch_mounts(cfg).read_only:
        return None
    own = [(cfg.workdir, 0o755), (SNAP_ROOT, 0o700)]
    if cfg.home:
        own.append((cfg.home, 0o755))
    logs = (cfg.logs_dir,) if cfg.logs_dir else ()
    return [*own, *((d, None) for d in (*SHARED_DIRS, "/dev/shm", *logs))]
