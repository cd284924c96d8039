"""The one error type of the command line: bad input, reported as one line, exit code 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2."""
