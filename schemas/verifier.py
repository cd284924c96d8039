"""Verifier checks: assertions over the final state, derived from probe deltas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Check(BaseModel):
    """One assertion the verifier makes.

    - ``state``: entry ``key`` of probe section ``section`` compares equal to ``expected``
      under ``compare`` (an ecosystem compare mode, or ``absent`` for a removed entry);
    - ``answer``: the answer file ``key`` holds ``expected`` (numbers compared numerically,
      other text exactly after trimming surrounding whitespace).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["state", "answer"]
    key: str
    expected: Any
    section: str = ""
    compare: str = "exact"


class GateResult(BaseModel):
    """Verifier outcomes on the controls: untouched state and reference solution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline_reward: float
    baseline_checks_passed: int
    reference_reward: float
    reference_checks_passed: int
    checks_total: int

    @property
    def passed(self) -> bool:
        return self.baseline_reward == 0.0 and self.reference_reward == 1.0
