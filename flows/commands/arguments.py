"""Argument types of the command line: what a value must look like to be read at all.

Bounds (how many, how large) are not here: they live in the settings models
(:mod:`flows.settings`, :mod:`flows.solve_settings`), which also check what a deployment
passes.  Each type raises ``argparse.ArgumentTypeError``, which the parser turns into one
line ``taskfactory: error: argument --x: ...`` and exit code 2.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def whole(text: str) -> int:
    """A whole number (its bounds: the settings model's)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def number(text: str) -> float:
    """A number like 0.1 (its bounds: the settings model's)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number like 0.1, got {text!r}") from None


def text(value: str) -> str:
    """Text that is valid UTF-8 (SQL, a name, a URL): a byte that is not UTF-8 reaches
    Python as a lone surrogate, which no library downstream can encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise argparse.ArgumentTypeError(
            f"holds a byte that is not UTF-8 (at character {exc.start}); write it as "
            "UTF-8 text") from None
    return value


NAME_MAX, PATH_MAX = 255, 4095
"""Bytes of one path component and of a whole path, as Linux takes them."""


def path(value: str) -> Path:
    """A path the operating system can take (each name at most 255 bytes, the whole at
    most 4095): a longer one fails every call with ENAMETOOLONG.  Never empty: an empty
    path would name the current folder without saying so.  Never with a NUL byte, which
    every system call refuses."""
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty path; name the file or folder (use . for "
                                         "the current folder)")
    if "\0" in value:
        raise argparse.ArgumentTypeError("a path with a NUL byte, which no file name holds; "
                                         "write the path without it")
    raw = os.fsencode(value)
    if len(raw) > PATH_MAX or any(len(part) > NAME_MAX for part in raw.split(b"/")):
        raise argparse.ArgumentTypeError(
            f"a path longer than the system takes ({NAME_MAX} bytes a name, {PATH_MAX} in "
            "all)")
    return Path(value)


def add_trust_option(p: argparse.ArgumentParser) -> None:
    """``--trust-ecosystem``, for a command that may load a user's ecosystem folder."""
    p.add_argument("--trust-ecosystem", action="store_true",
                   help="run the Python code of the ecosystem folders named here on this "
                        "host as you, unsandboxed (default: in a sandbox container, which "
                        "needs Docker); only for folders whose code you trust")


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    """``--quiet``, for a command that shows its progress (:mod:`flows.run.progress`)."""
    p.add_argument("--quiet", action="store_true",
                   help="no progress line on stderr (default: a live line on a terminal, "
                        "a plain one every 5 s elsewhere)")
