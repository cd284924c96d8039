"""The errors of a dataset folder: each message is one line naming the problem and the fix.

Exit codes (``flows.cli.main``): :attr:`DatasetError.exit_code` — 2 for input the user
must fix, 75 (EX_TEMPFAIL) for a disk that is full: free space and continue.
"""

from __future__ import annotations

import errno
import re

EX_TEMPFAIL = 75


class DatasetError(Exception):
    """A dataset that cannot be used as asked; the message names the problem and the fix."""

    exit_code = 2


class UnreadableManifest(DatasetError):
    """The manifest file exists but is not a manifest (``taskfactory repair`` rebuilds it);
    ``reason`` says what is wrong with it."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class NotADataset(DatasetError):
    """A folder the factory did not make (no marker, no manifest it can read)."""


class OutsideError(DatasetError):
    """A path or folder entry that would lead out of its folder (a ``..``, an absolute path,
    a separator in a name, a symbolic link or special file where a file or folder is
    expected): nothing is read, written, moved or deleted through it."""


class StorageError(DatasetError):
    """A write the disk refused (full, read-only, not permitted); ``problem`` says which
    write, without the fix."""

    def __init__(self, message: str, code: int = 2, problem: str = "") -> None:
        super().__init__(message)
        self.exit_code = code
        self.problem = problem or message

    @classmethod
    def of(cls, exc: OSError, path: object) -> StorageError:
        """The one-line error of a failed write to ``path``."""
        problem = f"cannot write {path}: {exc.strerror or exc}"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return cls(f"{problem}; free space on its disk and run the command again",
                       EX_TEMPFAIL, problem)
        return cls(f"{problem}; make the folder writable or choose another one", 2, problem)


def one_line(text: str) -> str:
    """``text`` with control characters (newlines too) shown as spaces."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text)


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s message (its type when it has none), on one line."""
    lines = str(exc).splitlines()
    return one_line(lines[0] if lines else type(exc).__name__)[:limit]
