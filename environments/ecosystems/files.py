"""The files of an ecosystem folder that this host reads itself: its spec, probe parts,
module files and image support files.

Each must be a regular file of the folder: a relative path without ``..``, not a symlink
and not below one (a crafted folder must not make the host read ``/etc/shadow`` into a
probe or an image), not a FIFO or a device (a read would hang), and at most
:data:`MAX_BYTES` long; text must be UTF-8.  :class:`FolderFileError` says which rule a
file broke, in words for one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_BYTES = 16 << 20
"""A spec, a probe or a support file; far more than any real one."""


class FolderFileError(ValueError):
    """A file an ecosystem names is not a regular file of its folder, or not readable."""


def own_file(folder: Path, name: str) -> Path:
    """``folder / name`` once it is a regular file of the folder (see the module
    docstring); FolderFileError otherwise."""
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or ".." in rel.parts:
        raise FolderFileError(f"{name!r} is not a path inside the folder")
    path = folder / rel
    try:
        mode = path.lstat().st_mode
    except OSError:
        raise FolderFileError(f"file {name!r} does not exist") from None
    if stat.S_ISLNK(mode) or os.path.realpath(path) != os.path.join(os.path.realpath(folder),
                                                                     *rel.parts):
        raise FolderFileError(f"{name!r} is a symlink (or below one); copy the file into "
                              "the folder")
    if not stat.S_ISREG(mode):
        raise FolderFileError(f"{name!r} is not a regular file")
    if path.stat().st_size > MAX_BYTES:
        raise FolderFileError(f"{name!r} is larger than {MAX_BYTES >> 20} MiB")
    return path


def own_text(folder: Path, name: str) -> str:
    """The UTF-8 text of the folder's file ``name``; FolderFileError as :func:`own_file`,
    or when it is not UTF-8."""
    path = own_file(folder, name)
    try:
        return path.read_bytes()[:MAX_BYTES].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FolderFileError(f"{name!r} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise FolderFileError(f"{name!r} cannot be read: {exc.strerror or exc}") from None
