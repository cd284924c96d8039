"""Probe part: reading the workspace without trusting it, shared by the built-in probes.

Standard library only.  It is joined in front of a probe script (``probe`` in
ecosystem.yaml lists the parts), so the script after it calls these functions directly.
The verifier runs the probe as root on a workspace the agent controlled, so nothing here
follows a symlink (of a file or of any directory on the way), opens anything but a regular
file (a FIFO never blocks the probe, a device is never opened), reads more than a bound
into memory, or writes anything.  A hard link is an ordinary file: the kernel lets a user
link only files it owns or may read and write (``fs.protected_hardlinks``), so its content
is nothing the agent could not have copied, and reading it runs nothing.

- ``workspace_entries(skip, hidden_dirs)``: path -> entry for every file under the current
  directory (the ``files`` sections).
- ``file_entry(path)``: one file's entry (below).
- ``read_regular(path, limit)``, ``copy_regular(path, dest, limit)``: a regular file's bytes,
  or a private copy of it, for probes that read their own files (the database, refs).
- ``private_dir()``: a temporary folder of the probe's own, removed on exit.

Only modules the factory's runner has already imported are used (no ``tempfile``,
``shutil`` or ``typing``: importing them would cost more than the probe's own work).
"""

import contextlib
import errno
import hashlib
import os
import stat

MAX_TEXT = 256 * 1024
"""A UTF-8 file up to this size is recorded as its text, a larger one by its digest."""
MAX_HASHED = 1 << 30
"""A file larger than this is not hashed (reading it would take seconds): ``{"oversize"}``."""
CHUNK = 1 << 20
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIRECTORY = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
KINDS = {stat.S_IFREG: "regular file", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket",
         stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
         stat.S_IFDIR: "directory", stat.S_IFLNK: "symlink"}


class NotRegular(Exception):
    """The path (or a directory on its way) is not what the probe may open: a symlink, a
    FIFO, a socket or a device, or a file where a directory is expected."""

    def __init__(self, path, kind, wanted="regular file"):
        super().__init__(f"{path} is a {kind}, not a {wanted} (the probe follows no symlink)")
        self.kind = kind


def _kind(mode):
    return KINDS.get(stat.S_IFMT(mode), "special file")


def _errname(exc):
    return errno.errorcode.get(exc.errno or 0, "EIO")


def _open_dir(name, dir_fd, path):
    """``os.open`` of a directory that turns a symlink (ELOOP) or a file (ENOTDIR) into
    ``NotRegular`` naming ``path``."""
    try:
        return os.open(name, DIRECTORY, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        raise NotRegular(path, _kind(mode), "directory") from None


def open_dir(path, dir_fd=None):
    """A descriptor of the directory ``path`` (relative to ``dir_fd`` or the current
    directory, or absolute), opened one component at a time, none of them a symlink."""
    fd = os.open("/" if path.startswith("/") else ".", DIRECTORY, dir_fd=dir_fd)
    walked = "/" if path.startswith("/") else ""
    for part in path.split("/"):
        if part in ("", "."):
            continue
        walked += part
        try:
            sub = _open_dir(part, fd, walked)
        finally:
            os.close(fd)
        fd, walked = sub, walked + "/"
    return fd


def open_regular(path, dir_fd=None):
    """A descriptor open for reading on the regular file ``path`` (relative to ``dir_fd``
    or the current directory); raises ``NotRegular`` for anything else and ``OSError``
    when it cannot be opened.  Only what ``lstat`` shows to be a regular file is opened
    (with O_NOFOLLOW and O_NONBLOCK, so a FIFO swapped in meanwhile cannot block), and the
    open file must be that same file."""
    head, slash, name = path.rpartition("/")
    parent = open_dir(head or slash, dir_fd)
    try:
        seen = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISREG(seen.st_mode):
            raise NotRegular(path, _kind(seen.st_mode))
        fd = os.open(name, READ, dir_fd=parent)
    finally:
        os.close(parent)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino) \
            or not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise NotRegular(path, "replaced file")
    return fd


def read_regular(path, limit, dir_fd=None):
    """The bytes of the regular file ``path``; ``ValueError`` when it holds more than
    ``limit`` bytes (only ``limit`` + 1 are ever read)."""
    with os.fdopen(open_regular(path, dir_fd), "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes")
    return data


def copy_regular(path, dest, limit, dir_fd=None):
    """Copy the regular file ``path`` to the new file ``dest``, ``CHUNK`` bytes at a time;
    ``ValueError`` past ``limit`` bytes.  Returns the number of bytes copied."""
    size = 0
    with os.fdopen(open_regular(path, dir_fd), "rb") as src, open(dest, "xb") as out:
        while chunk := src.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise ValueError(f"{path} is larger than {limit} bytes")
            out.write(chunk)
    return size


@contextlib.contextmanager
def private_dir():
    """A new folder (mode 0700, a random name under ``$TMPDIR`` when absolute, else
    ``/tmp``) yielded by path and removed, with everything in it, on exit."""
    tmp = os.environ.get("TMPDIR", "")
    path = os.path.join(tmp if tmp.startswith("/") else "/tmp", "probe-" + os.urandom(8).hex())
    os.mkdir(path, 0o700)
    try:
        yield path
    finally:
        for folder, dirs, files in os.walk(path, topdown=False):
            for name in files:
                os.unlink(os.path.join(folder, name))
            for name in dirs:
                os.rmdir(os.path.join(folder, name))
        os.rmdir(path)


def file_entry(path, dir_fd=None):
    """The file's text when it is UTF-8 and at most 256 KiB, else ``{"sha256", "size"}``
    (hashed as it is read); ``{"special": kind}`` for what is not a regular file (never
    read), ``{"unreadable": "EACCES"}`` (the errno's name) for a file that cannot be
    opened, ``{"oversize": size}`` for one larger than ``MAX_HASHED``."""
    try:
        fd = open_regular(path, dir_fd)
    except NotRegular as exc:
        return {"special": exc.kind}
    except OSError as exc:
        return {"unreadable": _errname(exc)}
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_TEXT + 1)
        digest, size = hashlib.sha256(data), len(data)
        while size > MAX_TEXT and (chunk := f.read(CHUNK)):
            digest.update(chunk)
            size += len(chunk)
            if size > MAX_HASHED:
                return {"oversize": os.fstat(fd).st_size}
    if size <= MAX_TEXT:
        with contextlib.suppress(UnicodeDecodeError):
            return data.decode("utf-8")
    return {"sha256": digest.hexdigest(), "size": size}


def workspace_entries(skip=frozenset(), hidden_dirs=True):
    """path -> entry for everything under the current directory but empty directories:
    a file's ``file_entry``, a symlink's ``{"symlink": target}`` (to a file or a directory:
    never followed), ``{"unreadable": ...}`` for a directory that cannot be listed.  Paths
    in ``skip`` are left out; with ``hidden_dirs`` False, so are directories named ``.*``.
    Depth first, holding one descriptor per level (none is followed by path)."""
    entries, stack = {}, []

    def enter(prefix, fd):
        try:
            with os.scandir(fd) as listing:
                names = sorted((e.name for e in listing), reverse=True)
        except OSError:
            os.close(fd)
            raise
        stack.append((prefix, fd, names))

    enter("", os.open(".", DIRECTORY))
    try:
        while stack:
            prefix, fd, names = stack[-1]
            if not names:
                os.close(fd)
                stack.pop()
                continue
            name = names.pop()
            path = prefix + name
            if path in skip:
                continue
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    entries[path] = {"symlink": os.readlink(name, dir_fd=fd)}
                elif not stat.S_ISDIR(mode):
                    entries[path] = file_entry(name, fd)
                elif hidden_dirs or not name.startswith("."):
                    enter(path + "/", _open_dir(name, fd, path))
            except FileNotFoundError:
                continue
            except (OSError, NotRegular) as exc:
                entries[path] = {"unreadable": _errname(exc) if isinstance(exc, OSError)
                                 else "ELOOP"}
    finally:
        for _, fd, _ in stack:
            os.close(fd)
    return entries
