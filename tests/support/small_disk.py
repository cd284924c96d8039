"""A real small or read-only filesystem for dataset tests: a tmpfs mounted on a folder of
the test (root only; the test is skipped with the reason otherwise, and fails instead
under ``TASKFACTORY_REQUIRE_MOUNT=1``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` (made) with a tmpfs of ``size`` (``600k``, ``8m``) mounted on it."""
    if os.geteuid() != 0:
        if os.environ.get("TASKFACTORY_REQUIRE_MOUNT") == "1":
            raise AssertionError("this test mounts a tmpfs and needs root")
        pytest.skip("mounting a tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def remount(folder: Path, options: str) -> None:
    """Change a mounted tmpfs: ``ro``, ``rw``, ``size=8m``."""
    _mount("-o", f"remount,{options}", str(folder))
