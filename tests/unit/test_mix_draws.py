"""The run's mix: every candidate draws its kind, scenario and seed by the run seed and its
own index in the run, so the realized mix follows the requested weights at any size and the
ecosystems of one run do not share their draws."""

import math
from collections import Counter

import pytest

from environments.ecosystems import load_ecosystem
from flows.factory import plan_run
from flows.settings import RunSettings
from tasks.plan.mix import DEFAULT_KINDS, draw_fault
from tasks.plan.planner import plan_graph

FIX_SHARE = DEFAULT_KINDS["fix"] / sum(DEFAULT_KINDS.values())  # build:2, fix:1 -> 1/3


def _kind(candidate) -> str:  # noqa: ANN001
    return "fix" if candidate.graph.fault else "build"


ALONE = ["files", "git", "service", "sql"]
"""The built-ins without the stacks: a built-in stack's tasks are the jobs across its
members, build tasks only (docs/stacks.md), so the kind weights speak of these."""


def _drawn_fixes(n: int, seed: int) -> int:
    """How many of a run's ``n`` candidates over the single built-ins draw a fix (before
    any downgrade)."""
    settings = RunSettings(tasks=n, seed=seed, ecosystems=ALONE)
    ecos = [load_ecosystem(ref) for ref in settings.ecosystems]
    k = len(ecos)
    return sum(draw_fault(ecos[i % k], i, seed, DEFAULT_KINDS, Counter()) is not None
               for i in range(n))


@pytest.mark.parametrize("n", [20, 200, 2000])
def test_drawn_kinds_follow_the_weights_within_binomial_noise(n):
    for seed in range(5):
        share = _drawn_fixes(n, seed) / n
        assert abs(share - FIX_SHARE) <= 3 * math.sqrt(FIX_SHARE * (1 - FIX_SHARE) / n), (
            n, seed, share)


def test_realized_build_share_of_200_candidates_is_two_thirds_on_five_seeds():
    shares = []
    for seed in range(5):
        plan, _ = plan_run(RunSettings(tasks=200, seed=seed, ecosystems=ALONE))
        kinds = Counter(_kind(c) for c in plan)
        shares.append(kinds["build"] / len(plan))
    assert all(abs(s - 2 / 3) <= 0.07 for s in shares), shares
    stacked, _ = plan_run(RunSettings(tasks=200, seed=0))  # the default mix: stacks build
    assert Counter(_kind(c) for c in stacked if "+" in c.ecosystem) == {"build": 60}


def test_the_ecosystems_of_a_round_draw_independently():
    """Before, candidate k of every ecosystem drew the same kind and seed: 20 candidates made
    only 5 independent draws, and each round of four had one kind."""
    plan = list(plan_run(RunSettings(tasks=200, seed=1))[0])
    rounds = [plan[i:i + 4] for i in range(0, len(plan), 4)]
    alike = sum(len({_kind(c) for c in r}) == 1 for r in rounds) / len(rounds)
    # independent draws: (2/3)^4 + (1/3)^4 = 0.21 of the rounds have one kind
    assert alike < 0.4, alike
    assert len({c.seed for c in plan}) == len(plan)
    assert [c.index for c in plan] == list(range(200))


def test_a_run_plans_the_same_candidates_again():
    settings = RunSettings(tasks=24, seed=7)
    first, _ = plan_run(settings)
    again, _ = plan_run(settings)
    assert [c.candidate_id for c in first] == [c.candidate_id for c in again]


def test_a_fault_without_new_fixes_gives_way_to_the_others():
    """A fault whose every re-plan repeats a fix planned already is drawn no more: the
    candidate takes another fault, and a run makes every distinct fix before its fix draws
    become builds.  Before, the service ecosystem kept drawing an exhausted fault as the
    least used and made 8 fix tasks in 100 candidates, whatever the seed.  (A fix is its
    repair and at most one read of the repaired entry, so service has 12 distinct fixes.)"""
    eco = load_ecosystem("service")
    distinct = {f.name: {plan_graph(eco, s, fault=f.name).fingerprint() for s in range(300)}
                for f in eco.spec.faults.injectors}
    for seed in range(3):
        plan = list(plan_run(RunSettings(tasks=100, seed=seed, ecosystems=["service"]))[0])
        faults = Counter(c.graph.fault for c in plan if c.graph.fault)
        assert faults == Counter({f: len(fps) for f, fps in distinct.items()}), (seed, faults)
