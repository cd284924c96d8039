"""Verifier checks: assertions over the final state, derived from probe deltas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

CheckKind = Literal["file_text", "file_lines_unordered", "csv_rows", "json_equal", "answer"]


class Check(BaseModel):
    """One assertion the verifier makes.

    - ``file_text``: file at ``path`` equals ``expected`` (str), trailing whitespace per line
      and trailing blank lines ignored;
    - ``file_lines_unordered``: same lines as ``expected`` (list[str]) as a multiset;
    - ``csv_rows``: same header and the same rows (order-insensitive unless ``ordered``);
    - ``json_equal``: parsed JSON equals ``expected``;
    - ``answer``: ``answer.txt`` equals ``expected`` (numbers compared numerically).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: CheckKind
    path: str
    expected: Any
    ordered: bool = True


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
