"""What each ``--difficulty`` asks of the planner, the seed and the gate.

- ``easy``: short build graphs (one to three steps; a fix graph is as long as its repair
  needs) over the usual seeded state;
- ``medium``: the default mix, as every run before tiers made it;
- ``hard``: deep graphs with at least :data:`HARD_MIN_LOOKUPS` values the solver must look
  up before it can act, over a seeded state :data:`HARD_SCALE` times the entries (with
  distractors that differ from a described entry in one property), and only tasks the
  open-loop solver fails: the gate rejects a hard candidate its open-loop control passes.
  Hard runs make build tasks (a fix that states only the symptom is not made yet).

Pure data; the planner (:mod:`tasks.plan.planner`), the realizer and the gate read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.graph import TaskKind, Tier

HARD_SCALE = 10
"""The hard tier's seed scale: every family of seeded entries ten times as many."""
HARD_MIN_LOOKUPS = 3
"""Looked-up values a hard graph holds at least (:func:`tasks.plan.lookups.looked_up`)."""
HARD_DEPTH_WEIGHTS: dict[int, float] = {7: 1, 8: 2}
"""Depths of a hard graph: its looked-up values and the work they feed (about fifteen
turns of a trajectory at seven or eight steps)."""


@dataclass(frozen=True)
class TierRules:
    scale: int
    """The seed's ``scale`` (``Ecosystem.seed_state``)."""
    depth_weights: dict[int, float] | None
    """Graph depths and their weights (None: the planner's default)."""
    min_lookups: int
    """Looked-up values every build graph holds at least."""
    kinds: dict[TaskKind, float] | None
    """The kinds the tier makes (None: the run's ``--kinds``)."""
    needs_observation: bool
    """The gate rejects a candidate whose open-loop control passes."""


TIER_RULES: dict[Tier, TierRules] = {
    "easy": TierRules(1, {1: 1, 2: 2, 3: 2}, 0, None, False),
    "medium": TierRules(1, None, 0, None, False),
    "hard": TierRules(HARD_SCALE, HARD_DEPTH_WEIGHTS, HARD_MIN_LOOKUPS, {"build": 1.0}, True),
}


def scale_of(tier: Tier | None) -> int:
    """The seed scale of a task made at ``tier`` (None: before tiers, scale 1)."""
    return TIER_RULES[tier or "medium"].scale
