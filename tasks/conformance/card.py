"""The report card of ``check-ecosystem``: each check's line, what a short trial run made,
and what is missing for each task kind and for tasks that need observation, each with the
checklist section of the ecosystem reference that adds it.

The ecosystem passes (:meth:`Card.passes`) when every check passes and the trial accepted
at least one task: then it makes valid tasks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from environments.ecosystems import Ecosystem
from tasks.conformance.checks import Finding, up_to_first_failure
from tasks.plan.mix import REFERENCE

REASON_SECTIONS = {"overspecified": "5-alternatives", "ambiguous": "2-tools",
                   "degenerate": "2-tools", "unexpected_change": "3-probe",
                   "seed_error": "1-seed", "seed_timeout": "1-seed",
                   "sampler_error": "4-samplers", "sampler_timeout": "4-samplers",
                   "no_purpose": "10-shared-and-scratch-sections"}
"""Rejection reasons of the trial and the checklist section that most often fixes them."""


@dataclass
class Trial:
    """What the trial run made: candidates planned and accepted per kind, accepted tasks
    that need observation, and rejections by ``stage/reason``."""

    planned: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)
    observed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    ran: bool = False


@dataclass
class Card:
    eco: Ecosystem
    findings: list[Finding]
    trial: Trial

    def passes(self) -> bool:
        return all(f.ok for f in self.findings) and sum(self.trial.accepted.values()) > 0

    def lines(self) -> list[str]:
        """The card, one line per check, trial figure and gap."""
        out = [f"ecosystem {self.eco.name} ({self.eco.folder})"]
        shown, left_out = up_to_first_failure(self.findings)
        out += [f.line() for f in shown]
        if left_out:
            out.append(f"skip {left_out} later checks: they build on the one that fails")
        out += self._trial_lines() + self._gap_lines()
        verdict = ("passes: it makes valid tasks" if self.passes() else
                   "fails: fix each FAIL line, then check again")
        return [*out, f"check-ecosystem {self.eco.name}: {verdict}"]

    def _trial_lines(self) -> list[str]:
        t = self.trial
        if not t.ran:
            return ["skip trial run: not run while a check fails"]
        total = sum(t.accepted.values())
        lines = [f"{'ok  ' if total else 'FAIL'} trial run: {total}/{sum(t.planned.values())} "
                 f"accepted ({_counts(t.accepted)}), {t.observed} need observation"]
        for reason, n in t.rejected.most_common(3):
            section = REASON_SECTIONS.get(reason.split("/")[-1])
            lines.append(f"     rejected {reason}: {n}"
                         + (f" (see {REFERENCE}#{section})" if section else ""))
        return lines

    def _gap_lines(self) -> list[str]:
        spec, t = self.eco.spec, self.trial
        gaps = []
        if spec.faults is None:
            gaps.append(f"missing fix tasks: no fault injectors; add `faults:` "
                        f"({REFERENCE}#8-faults)")
        elif t.ran and t.planned["fix"] and not t.accepted["fix"]:
            gaps.append(f"missing fix tasks: none of {t.planned['fix']} planned was accepted "
                        f"({REFERENCE}#8-faults)")
        if spec.service is not None:
            gaps.append("missing reconstruct tasks: the state lives in a running service; a "
                        f"reconstruct program needs a folder ({REFERENCE}#reconstruct-tasks)")
        if not (spec.describers or spec.discovery):
            gaps.append("missing tasks that need observation: no describers and no discovery; "
                        f"add `describers:` ({REFERENCE}#7-describers) and `discovery:` "
                        f"({REFERENCE}#6-discovery)")
        elif t.ran and t.accepted.total() and not t.observed:
            gaps.append("missing tasks that need observation: none of the trial's accepted "
                        f"tasks needs one; add describers ({REFERENCE}#7-describers)")
        return [f"gap  {g}" for g in gaps]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counter.items())) or "none"
