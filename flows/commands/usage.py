"""The CLI's bad-input error and how it is written, in their own module so that command
modules and ``flows.cli`` (also when run as ``python -m flows.cli``) share them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class UsageError(Exception):
    """Bad input: reported as one line ``taskfactory: error: ...``, exit code 2."""


def one_line(text: str) -> str:
    """``text`` on one line: a character that is not printable (a line break, a control
    character from a path the user typed) is written as its escape, ``\\x1e``."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace")
                   .decode("ascii") for c in text)


def option_error(exc: ValidationError,
                 options: Mapping[str, str] | None = None) -> UsageError:
    """The first problem a settings model found, as a UsageError naming the option it came
    from: ``options[field]``, else ``--`` and the field's name with dashes."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    option = (options or {}).get(field) or "--" + field.replace("_", "-")
    return UsageError(f"{option}: {err['msg'].removeprefix('Value error, ')}")
