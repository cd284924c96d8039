"""The failure taxonomy shared by all stages, and the exception that carries it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from environments.ecosystems.usercode import UserCodeError
from schemas.records import StageName

if TYPE_CHECKING:
    from tasks.execute.repair_llm import RepairRequest

Reason = Literal[
    "environment",       # missing binary, package or file
    "binding",           # an argument the tool rejects, or no literal fits the state
    "tool_error",        # non-zero exit
    "timeout",
    "resource",          # memory or process limit
    "degenerate",        # succeeded, but the output is empty or trivial
    "purposeless",       # succeeded, but changed nothing, copied an input or undid a step
    "nondeterministic",  # two executions disagree
    "ambiguous",         # the outcome depends on a choice the instruction cannot fix
    "unexpected_change",  # state changed where no step said it would
    "no_outcome",        # nothing for a verifier to check
    "baseline_passed",   # verifier passes on the untouched environment
    "reference_failed",  # verifier fails after the reference solution
    "empty_outputs_passed",     # the verifier passes when every output is created empty
    "partial_solution_passed",  # ... after the reference minus its last mutating step
    "literals_passed",   # ... when outputs hold only the instruction's literals
    "repair_moot",       # ... (a fix task) after the reference minus its repair steps
    "vandal_passed",     # ... after the reference plus a change to an entry it must keep
    "overspecified",     # the verifier fails a solution that takes another correct route
    "hackable",          # an agent that only attacks the verifier gets a reward
    "promise_unchecked",  # the verifier passes a near miss that breaks one promise
    "no_observation_needed",  # solvable open-loop, and the run requires observation
    "too_few_lookups",   # (hard tier) repairs left the graph fewer looked-up values than asked
    "case_layout",       # (reconstruct) too few seeds lay out what the program reads
    "case_failed",       # (reconstruct) the reference program fails on a case
    "case_too_large",    # (reconstruct) a public case's workspace is too large to ship
    "invariant_outputs",  # (reconstruct) the outputs are the same on every hidden case
    "choice_untested",   # (reconstruct) no hidden case resolves a choice to a new entry
    "memorizer_passed",  # (reconstruct) a program copying a public output passes
    "hardcoded_passed",  # (reconstruct) the program with case-a's choices hard-coded passes
    "hidden_leaked",     # (reconstruct) hidden case content in the agent's workspace
    "examples_differ",   # (reconstruct) the program's test run differs from an example
    "sandbox",           # the sandbox itself failed (engine error)
    "seed_error",        # the ecosystem's seed code raised
    "seed_timeout",      # ... or did not return in time
    "sampler_error",     # a sampler raised (other than "no value fits")
    "sampler_timeout",   # ... or did not return in time
    "not_preserved",     # the instruction lacks a literal the solver needs or the verifier reads
    "leaked_answer",     # the instruction shows the task's own answer
    "unreadable",        # an instruction sentence is too long or nests descriptions too deep
    "ungrounded",        # a trajectory uses a value the agent could not have seen
]

REPAIRABLE: tuple[Reason, ...] = ("environment", "binding", "tool_error", "timeout",
                                  "resource", "degenerate", "purposeless", "ambiguous")
"""Categories a failing step may be repaired from (the others are verdicts on a whole run)."""


class StageFailure(Exception):
    """A candidate cannot proceed: which stage, which reason, and a one-line detail.

    A failing step also carries ``step_args`` (its resolved arguments), ``call`` (what an LLM
    repairer is shown) and, for ``environment``, ``missing``: ``("command", name)`` or
    ``("path", path)`` when the error names what was missing."""

    def __init__(self, stage: StageName, reason: Reason, detail: str,
                 missing: tuple[str, str] | None = None) -> None:
        super().__init__(f"{stage}/{reason}: {detail}")
        self.stage = stage
        self.reason = reason
        self.detail = detail
        self.missing = missing
        self.step_args: dict[str, str] = {}
        self.call: RepairRequest | None = None

    def __str__(self) -> str:
        return f"{self.stage}/{self.reason}: {self.detail}"


def user_code_failure(stage: StageName, exc: UserCodeError) -> StageFailure:
    """The rejection for an ecosystem's own code that raised or hung: ``seed_error``,
    ``seed_timeout``, ``sampler_error`` or ``sampler_timeout``, the call and what it did."""
    kind = "sampler" if exc.what.startswith("samplers.") else "seed"
    reason: Reason = f"{kind}_{'timeout' if exc.timed_out else 'error'}"  # type: ignore[assignment]
    return StageFailure(stage, reason, str(exc))
