"""The failure taxonomy shared by all stages, and the exception that carries it."""

from __future__ import annotations

from typing import Literal

Reason = Literal[
    "environment",       # missing binary, package or file
    "binding",           # an argument the tool rejects, or no literal fits the state
    "tool_error",        # non-zero exit
    "timeout",
    "resource",          # memory or process limit
    "degenerate",        # succeeded, but the output is empty or trivial
    "nondeterministic",  # two executions disagree
    "ambiguous",         # the outcome depends on a choice the instruction cannot fix
    "unexpected_change",  # state changed where no step said it would
    "no_outcome",        # nothing for a verifier to check
    "baseline_passed",   # verifier passes on the untouched environment
    "reference_failed",  # verifier fails after the reference solution
    "sandbox",           # the sandbox itself failed (engine error)
    "not_preserved",     # the instruction lacks a literal the solver needs or the verifier reads
    "ungrounded",        # a trajectory uses a value the agent could not have seen
]


class StageFailure(Exception):
    """A candidate cannot proceed: which stage, which reason, and a one-line detail."""

    def __init__(self, stage: str, reason: Reason, detail: str) -> None:
        super().__init__(f"{stage}/{reason}: {detail}")
        self.stage = stage
        self.reason = reason
        self.detail = detail
