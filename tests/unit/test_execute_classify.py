"""How a finished command's result maps to a failure category."""

from __future__ import annotations

import pytest

from environments.sandbox import ExecResult
from tasks.execute.steps import classify


def _result(code: int, stderr: str = "", timed_out: bool = False) -> ExecResult:
    return ExecResult(exit_code=code, stdout="", stderr=stderr, duration_s=1.0,
                      timed_out=timed_out, truncated=False)  # fmt: skip


@pytest.mark.parametrize("result,reason", [
    (_result(124, "", timed_out=True), "timeout"),
    # a shell retrying failed forks (pids limit) for longer than the step may run
    (_result(124, "bash: fork: retry: Resource temporarily unavailable\n", True), "resource"),
    (_result(137, "Killed\n"), "resource"),
    (_result(1, "MemoryError\n"), "resource"),
    (_result(127, "bash: line 1: frob: command not found\n"), "environment"),
    (_result(1, "cat: config/a.ini: No such file or directory\n"), "environment"),
    (_result(3, "checksum mismatch\n"), "tool_error"),
])  # fmt: skip
def test_failure_categories(result: ExecResult, reason: str) -> None:
    failure = classify(result)
    assert failure is not None and failure.reason == reason, failure
    assert classify(_result(0)) is None


def test_environment_failures_name_what_is_missing() -> None:
    assert classify(_result(127, "bash: line 1: jq: command not found\n")).missing == (
        "command", "jq")
    assert classify(_result(1, "cat: config/a.ini: No such file or directory\n")).missing == (
        "path", "config/a.ini")
    python = "FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'\n"
    assert classify(_result(1, python)).missing == ("path", "data/x.csv")
