"""Paths inside a folder the factory owns (a dataset, an export): which names and relative
paths are valid, and how a file there is opened, written, moved or deleted without
leaving the folder.  Every reader and writer of a dataset, and the Harbor export, go
through these functions; nothing else builds a path from a manifest, a row or an id.

- A **name** (one folder entry: a run id in a shard name, a task's export folder) is a
  non-empty string of at most 255 bytes of UTF-8, not ``.`` or ``..``, without ``/``,
  ``\\``, NUL or other control characters.
- A **relative path** (a manifest's shard or abandoned path) is names joined by ``/``:
  never absolute, never ``..``.
- Every folder on the way below the base folder is a real folder: a symbolic link, FIFO,
  socket or device is never followed (the base itself is what the user named, and may
  be a link).  Folders are created one level at a time, each checked.
- A file is opened relative to its folder with ``O_NOFOLLOW | O_NONBLOCK`` after an
  ``lstat`` that finds a regular file, and checked again on the open descriptor: a FIFO
  never blocks a reader, a device is never opened, a link never followed.
- A write goes to a temp name created exclusively (``O_EXCL | O_NOFOLLOW``: a link
  planted under the temp name is replaced, never written through), is fsynced and
  renamed into place; a write the disk refuses is a :class:`StorageError`.

This holds against a folder crafted before a command runs, not against one changed
while it runs (the paths DuckDB reads are checked, then opened by DuckDB).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path

from tasks.dataset.store.errors import OutsideError, StorageError

NAME_BYTES = 255
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f/\\]")


class NotAFile(OSError):
    """A path that is a symbolic link or special file where a regular file is expected."""


def _not_a_name(text: object, what: str) -> str | None:
    """Why ``text`` is not a valid name, or None."""
    if not isinstance(text, str) or not text:
        return f"{what} is empty or not a string"
    if text in (".", "..") or _FORBIDDEN.search(text):
        return (f"{what} {text!r} is not a plain name (it holds '/', '\\', a control "
                "character, or is '.' or '..')")
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        return f"{what} {text!r} is not valid UTF-8"
    return f"{what} is {size} bytes long, more than {NAME_BYTES}" if size > NAME_BYTES else None


def check_name(text: object, what: str = "name") -> str:
    """``text`` when it is a valid name (see the module docstring); ValueError naming why
    it is not."""
    why = _not_a_name(text, what)
    if why is not None:
        raise ValueError(why)
    assert isinstance(text, str)
    return text


def is_name(text: object) -> bool:
    """Whether ``text`` is a valid name."""
    return _not_a_name(text, "") is None


def check_relative(text: object, what: str = "path") -> str:
    """``text`` when it is a valid relative path; ValueError naming why it is not."""
    if not isinstance(text, str) or not text or text.startswith("/"):
        raise ValueError(f"{what} {text!r} is not a relative path")
    for part in text.split("/"):
        check_name(part, f"{what} {text!r}: part")
    return text


def kind(mode: int) -> str:
    """What an ``lstat`` mode is, in words."""
    for test, word in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "folder"),
                       (stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return word
    return "device"


def real_folder(base: Path, rel: str, create: bool = False) -> Path | None:
    """``base / rel`` when every folder on the way is a real folder; None when one is
    missing (created, each checked, when ``create``).  OutsideError naming the first
    entry on the way that is not a folder."""
    path = base
    for part in check_relative(rel).split("/"):
        path = path / part
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            if not create:
                return None
            with writing(path), contextlib.suppress(FileExistsError):
                path.mkdir()
            mode = path.lstat().st_mode
        if not stat.S_ISDIR(mode):
            raise OutsideError(f"{path} is a {kind(mode)}, never followed, where a folder "
                               "belongs; remove it")
    return path


def folder_if_real(base: Path, rel: str) -> Path | None:
    """``base / rel`` when it and every folder on the way are real folders, else None."""
    with contextlib.suppress(OutsideError):
        return real_folder(base, rel)
    return None


def inside(base: Path, rel: str) -> bool:
    """Whether ``base / rel`` exists (as anything, a link too) in real folders below
    ``base``: what can be moved or deleted there without leaving it."""
    parent = rel.rpartition("/")[0]
    folder = folder_if_real(base, parent) if parent else base
    return folder is not None and os.path.lexists(base / rel)


def open_file(base: Path, rel: str) -> BufferedReader:
    """The regular file ``base / rel`` opened for reading, never through a link.

    FileNotFoundError when it is missing, :class:`NotAFile` (its message: which entry is
    what) when it or a folder on the way is a link or special file, OSError otherwise."""
    parts = check_relative(rel).split("/")
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
            if not stat.S_ISDIR(mode):
                on_the_way = "/".join(parts[:i + 1])
                raise NotAFile(errno.ELOOP, f"{on_the_way} is a {kind(mode)}, never followed")
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                            dir_fd=fd)
            os.close(fd)
            fd = inner
        mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(errno.ELOOP, f"a {kind(mode)}, never followed")
        file = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                       dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file).st_mode):
        os.close(file)
        raise NotAFile(errno.ELOOP, "changed into a special file while opened, not read")
    os.set_blocking(file, True)
    return open(file, "rb", closefd=True)  # noqa: SIM115 (the caller closes it)


def regular_files(folder: Path) -> Iterator[str]:
    """The names of the regular files in the real folder ``folder`` whose names are valid;
    links, special files, folders and names that are not UTF-8 are left out."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False) and is_name(entry.name):
                yield entry.name


def odd_entries(folder: Path) -> Iterator[tuple[str, str]]:
    """(name, why) of each entry of ``folder`` a reader leaves alone: links, FIFOs,
    sockets, devices, names that are not valid UTF-8 (the name printed escaped)."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if not is_name(entry.name):
                yield (os.fsencode(entry.name).decode("ascii", "backslashreplace"),
                       "a name that is not valid UTF-8")
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                yield entry.name, f"a {kind(mode)}"


def size(path: Path) -> int:
    """Bytes of a regular file, or of the regular files below a real folder (no link is
    followed)."""
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size if stat.S_ISREG(st.st_mode) else 0
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def remove(base: Path, rel: str) -> None:
    """Delete the regular file or real folder ``base / rel`` (a folder with everything in
    it, its links deleted, never followed); anything else is left alone."""
    parent, _, name = rel.rpartition("/")
    folder = real_folder(base, parent) if parent else base
    if folder is None:
        return
    path = folder / check_name(name)
    with contextlib.suppress(FileNotFoundError):
        mode = path.lstat().st_mode
        if stat.S_ISDIR(mode):
            shutil.rmtree(path)  # fd-based: never follows a link inside
        elif stat.S_ISREG(mode):
            path.unlink()


def move(base: Path, rel: str, to: str) -> None:
    """Rename ``base / rel`` (whatever it is: a link moves as a link) to ``base / to``,
    creating the real folders on the way."""
    parent, _, name = rel.rpartition("/")
    source = (real_folder(base, parent) if parent else base)
    if source is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(base / rel))
    parent, _, target = to.rpartition("/")
    folder = real_folder(base, parent, create=True) if parent else base
    assert folder is not None
    with writing(base / to):
        os.rename(source / check_name(name), folder / check_name(target))


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an OSError of a write to ``path`` into a one-line :class:`StorageError`."""
    try:
        yield
    except OSError as exc:
        raise StorageError.of(exc, path) from None


def install_folder(tmp: Path, final: Path) -> None:
    """Rename the folder ``tmp`` to ``final`` (both in one folder); a folder already at
    ``final`` (the caller checked that it may go) is swapped out first, then removed."""
    if os.path.lexists(final):
        old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
        os.rename(final, old)  # onto the empty folder just made
        os.rename(tmp, final)
        shutil.rmtree(old)
    else:
        os.rename(tmp, final)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def create(path: Path, data: bytes, exclusive: bool = False) -> None:
    """Write ``data`` to a new file ``path`` (an existing link or file at ``path`` is
    replaced, never written through); FileExistsError when ``exclusive`` and it exists.
    The caller checked that ``path.parent`` is a real folder."""
    if not exclusive:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        if exclusive:
            raise
        raise OutsideError(f"{path} is a folder where a file belongs; remove it") from None
    except OSError as exc:
        raise StorageError.of(exc, path) from None
    with writing(path):
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
                f.flush()
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)  # a half-written file takes no room on a full disk
            raise
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one
    (``path.parent`` is a real folder the caller checked)."""
    tmp = path.with_name(f".{path.name}.tmp")
    create(tmp, data)
    with writing(path):
        try:
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)


def check_writable(folder: Path, what: str) -> None:
    """StorageError ("cannot write ``what`` ...", e.g. ``to --out``) unless ``folder``, or the
    folder to be made there, can be written.  Creates nothing outside ``folder``: a
    missing one is checked with ``access`` on its closest existing parent, an existing
    one by creating and removing a probe file in it."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a folder")
        if existing != folder:
            if not os.access(existing, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, f"{existing} is not writable")
            return
        probe = folder / f".write-test-{os.getpid()}"
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        probe.unlink()
    except OSError as exc:
        error = StorageError.of(exc, folder)
        raise StorageError(f"cannot write {what} {folder}: {exc.strerror or exc}; choose a "
                           "writable folder", error.exit_code) from None
