"""The CLI's bad-input error and argument types, in their own module so that command
modules and ``flows.cli`` (also when run as ``python -m flows.cli``) share them."""

import argparse
from pathlib import Path


class UsageError(Exception):
    """Bad input: reported as one line ``taskfactory: error: ...``, exit code 2."""


def path_argument(text: str) -> Path:
    """A ``--data`` or ``--out`` path; an empty one is refused (it would name the current
    folder without saying so)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name the folder (use . for the "
                                         "current one)")
    return Path(text)
