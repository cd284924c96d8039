"""Verifier checks: assertions over the final state, derived from probe deltas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Check(BaseModel):
    """One assertion the verifier makes.

    - ``state``: entry ``key`` of probe section ``section`` compares equal to ``expected``
      under ``compare`` (an ecosystem compare mode, or ``absent`` for a removed entry);
    - ``answer``: the answer file ``key`` holds ``expected`` (numbers compared numerically,
      other text exactly after trimming surrounding whitespace);
    - ``unchanged``: every seeded entry of probe section ``section`` that the task does not
      change is still there and equal under ``compare``: ``expected`` maps each entry's key
      to its digest (:func:`tasks.verify.comparisons.digest`); ``key`` is the section's name;
    - ``only``: a shared probe section holds no entry but those of ``expected`` (the seeded
      ones and those the task asks for): nothing nobody asked for was added; ``key`` is
      the section's name.

    An answer check's ``compare`` is its parser (``int``, ``number``, ``text``, ``lines``,
    ``json``): the format its instruction promises.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["state", "answer", "unchanged", "only"]
    key: str
    expected: Any
    section: str = ""
    compare: str = "exact"


GUARDS = ("unchanged", "only")
"""Check kinds that guard what a task leaves alone rather than ask for an output."""


class GateResult(BaseModel):
    """Verifier outcomes of the gate's controls (see tasks/gate/gate.py).

    ``baseline``: the untouched environment, which is also what the nop shortcut leaves;
    ``reference``: after ``solve.sh``; ``empty``: every expected output created empty;
    ``partial``: the reference minus its last mutating step (None without a write step);
    ``literals``: outputs filled with the instruction's literals, the best of
    ``literal_trials`` answer texts.  Accepted tasks have baseline 0, reference 1 and
    every shortcut below 1.  ``open_loop``: measured, never a rejection — the reference
    solution with every argument the instruction does not write replaced by a wrong value
    (``tasks/gate/open_loop.py``); 0 when the task needs something observed.  ``vandal``: the
    reference solution plus one change to a seeded entry the task leaves alone
    (``tasks/gate/vandal.py``); accepted tasks score 0, None where no section can be vandalized.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    checks_total: int
    baseline_reward: float
    baseline_checks_passed: int
    reference_reward: float
    reference_checks_passed: int
    empty_reward: float | None
    """None where the control does not apply (reconstruct tasks)."""
    empty_checks_passed: int | None
    partial_reward: float | None
    partial_checks_passed: int | None
    literals_reward: float | None
    """None where the control does not apply (reconstruct tasks)."""
    literals_checks_passed: int | None
    literal_trials: int | None
    open_loop_reward: float | None = None
    """None on tasks gated before the control existed."""
    vandal_reward: float | None = None
    vandal_checks_passed: int | None = None
    memorizer_reward: float | None = None
    """A reconstruct task's program that copies the first public example's expected output:
    accepted tasks score 0; None on other kinds."""
    hardcoded_reward: float | None = None
    """A reconstruct task's reference program with each choice replaced by the entry it
    found in the first public example (``tasks/reconstruct/choices.py``): accepted tasks score 0;
    None on other kinds and where the program makes no choice."""
    alternative_reward: float | None = None
    """The solution with each step's alternative command (``tasks/gate/alternative.py``):
    accepted tasks score 1; None where no step's tool has an alternative."""
    near_miss_reward: float | None = None
    """The reference solution, then changes that each break one promise of the instruction
    (``tasks/gate/near_miss.py``): accepted tasks score 0, and fail the check of each; None where
    the control does not apply and on tasks gated before it existed."""
    hostile_reward: float | None = None
    """An agent that only attacks the verifier (``tasks/gate/attacks.py``): accepted tasks
    score 0; None where the control does not run (a backend with one user, on which the
    verifier cannot keep its reward from the agent) and on tasks gated before it existed."""

    @property
    def needs_observation(self) -> bool | None:
        """The open-loop solution scored below 1 (None when it was not measured)."""
        return None if self.open_loop_reward is None else self.open_loop_reward < 1.0

    @property
    def passed(self) -> bool:
        shortcuts = [self.empty_reward or 0.0, self.partial_reward or 0.0,
                     self.literals_reward or 0.0, self.vandal_reward or 0.0,
                     self.memorizer_reward or 0.0, self.hostile_reward or 0.0,
                     self.near_miss_reward or 0.0, self.hardcoded_reward or 0.0]
        return (self.baseline_reward == 0.0 and self.reference_reward == 1.0
                and all(r < 1.0 for r in shortcuts) and self.alternative_reward in (None, 1.0))
