"""Interrupting a CLI subprocess the way a terminal does, and waiting for it to stop."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

CLI_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
                   " runpy.run_module('flows.cli', run_name='__main__')")
"""``python -c CLI_WITH_CTRL_C <args>``: the CLI with SIGINT at its default, as a
terminal's job has it (a suite started without job control inherits it ignored)."""


def interrupt(proc: subprocess.Popen, signum: int, within_s: float) -> str:
    """Send ``signum`` (SIGINT to the whole process group, as a terminal sends Ctrl-C;
    another signal to the process) and wait up to ``within_s`` seconds, a correctness
    bound, not a speed claim; the process's stderr."""
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    try:
        return proc.communicate(timeout=within_s)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"did not stop within {within_s} s of {signal.Signals(signum).name}: "
                    f"{proc.communicate()[1][-3000:]}")
