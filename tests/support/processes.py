"""Stopping the processes a test started."""

import subprocess


def stop(proc: subprocess.Popen, grace_s: float = 30) -> None:
    """SIGTERM ``proc``, then SIGKILL it if it has not exited within ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
