"""File verbs of the in-container runner (standard library only), run as the sandbox user.

Errors are ``FileOpError`` with a ``kind`` from ``protocol.ERRORS``. Snapshots copy a tree
with ``shutil.copytree``: modes, timestamps, symlinks, FIFOs and sockets are kept; hard
links become separate copies; files the sandbox user cannot read fail the snapshot.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # typing is not imported at run time: the runner starts fast
if TYPE_CHECKING:
    from typing import Any

CHUNK = 1 << 16


class FileOpError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _file_error(e: OSError, path: str) -> FileOpError:
    kinds = {errno.ENOENT: "notfound", errno.ENOTDIR: "notfound", errno.EISDIR: "isdir",
             errno.EACCES: "denied", errno.EPERM: "denied"}  # fmt: skip
    return FileOpError(kinds.get(e.errno or 0, "failed"), f"{path}: {e.strerror or e}")


def read_file(path: str, max_bytes: int) -> bytes:
    """The bytes of regular file ``path`` (symlinks followed); FileOpError otherwise."""
    try:  # O_NONBLOCK: opening a FIFO must not hang the runner
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise _file_error(e, path) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileOpError("isdir", f"{path} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("notfile", f"{path} is not a regular file")
        if st.st_size > max_bytes:
            raise FileOpError("toolarge", f"{path}: {st.st_size} bytes > {max_bytes}")
        os.set_blocking(fd, True)
        parts, size = [], 0
        while size <= max_bytes and (data := os.read(fd, max(CHUNK, st.st_size))):
            parts.append(data)
            size += len(data)
        if size > max_bytes:  # it grew while we read it
            raise FileOpError("toolarge", f"{path}: more than {max_bytes} bytes")
        return b"".join(parts)
    except OSError as e:
        raise _file_error(e, path) from None
    finally:
        os.close(fd)


def write_files(files: list[list[Any]], blob: bytes) -> dict[str, Any]:
    """Write each ``[path, size]`` from ``blob`` in order: missing parents are created
    (0755), an existing file or symlink at the path is replaced, files get mode 0644."""
    view, pos = memoryview(blob), 0
    for path, size in files:
        data, pos = view[pos : pos + size], pos + size
        try:
            parent = os.path.dirname(path)
            if not os.path.isdir(parent):
                os.makedirs(parent, mode=0o755)
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    raise FileOpError("isdir", f"{path} is a directory")
                os.unlink(path)
            except FileNotFoundError:
                pass
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(path, flags, 0o644)
            try:
                os.fchmod(fd, 0o644)
                while data:
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)
        except OSError as e:
            raise _file_error(e, path) from None
    return {}




def _copy(src: str, dst: str) -> None:
    """copy2, but FIFOs and sockets are recreated rather than read."""
    import shutil

    st = os.lstat(src)
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        os.mknod(dst, st.st_mode)
        shutil.copystat(src, dst)
    else:
        shutil.copy2(src, dst)


def copy_tree(src: str, dst: str) -> dict[str, Any]:
    """Copy directory ``src`` to the new directory ``dst`` (its parent is made 0700)."""
    import shutil

    try:
        os.makedirs(os.path.dirname(dst), mode=0o700, exist_ok=True)
        shutil.copytree(src, dst, symlinks=True, copy_function=_copy)
    except (OSError, shutil.Error) as e:
        raise FileOpError("failed", f"cannot copy {src} to {dst}: {e}") from None
    return {}


def _open_up(path: str) -> None:
    """Give the owner rwx on ``path`` and every directory below, before listing each one,
    so read-only and unreadable directories can be emptied (errors are ignored)."""
    try:
        os.chmod(path, os.lstat(path).st_mode | stat.S_IRWXU)
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _open_up(entry.path)


def _remove_entries(path: str, skip: tuple[str, ...] = ()) -> None:
    """Remove everything in directory ``path`` (read-only directories included) but the
    entries at the paths in ``skip``."""
    import shutil

    _open_up(path)
    for entry in os.scandir(path):
        if entry.path in skip:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def empty_dir(path: str, mode: int | None, skip: tuple[str, ...] = ()) -> list[str]:
    """Empty directory ``path`` but the entries at the paths in ``skip`` (mount points of
    other places) and, with ``mode``, give it that mode; returns what is left over that
    should not be: the entries it could not remove, or ``path`` with a wrong mode."""
    try:
        _remove_entries(path, skip)
        if mode is not None:
            os.chmod(path, mode)
    except OSError:
        pass
    try:
        left = [e.path for e in os.scandir(path) if e.path not in skip]
        if mode is not None and stat.S_IMODE(os.stat(path).st_mode) != mode:
            left.append(f"{path} (mode)")
    except OSError as e:
        left = [f"{path} ({e.strerror or e})"]
    return left


def restore_tree(src: str, dst: str) -> dict[str, Any]:
    """Make directory ``dst`` an exact copy of ``src`` again: everything in it is removed
    (read-only directories included), then ``src`` is copied in, with its mode and times."""
    import shutil

    if not os.path.isdir(src):
        raise FileOpError("notfound", f"snapshot {src} is gone")
    try:
        _remove_entries(dst)
        shutil.copytree(src, dst, symlinks=True, copy_function=_copy, dirs_exist_ok=True)
        shutil.copystat(src, dst)
    except (OSError, shutil.Error) as e:
        raise FileOpError("failed", f"cannot restore {dst} from {src}: {e}") from None
    return {}
