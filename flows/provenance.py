"""Where generated rows come from: the generator's version and fresh run ids."""

from __future__ import annotations

import secrets
import subprocess
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@cache
def generator_version() -> str:
    """``<package version>+g<git commit>`` when run from a checkout, else the version."""
    try:
        pkg = version("taskfactory")
    except PackageNotFoundError:
        pkg = "0+unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=5, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{pkg}+g{commit}" if commit else pkg


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
