"""Whether a process that left something behind (a scratch folder, a container labelled
with its pid) is still running on this host."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True when process ``pid`` exists (or cannot be told apart from one that does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
