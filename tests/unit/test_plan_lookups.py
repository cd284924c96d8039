"""Graphs that need observation: looked-up values counted as the statistics count them,
how many an ecosystem's tools allow, and graphs of three that read as one job."""

import json

import pytest

from environments.ecosystems import load_ecosystem
from schemas.graph import WorkflowGraph
from tasks.plan.lookups import looked_up, lookup_capacity, lookup_gap
from tasks.plan.planner import (
    PlanningError,
    iter_candidates,
    plan_candidates,
    plan_graph,
)
from tasks.plan.tiers import HARD_DEPTH_WEIGHTS, HARD_MIN_LOOKUPS
from tests.unit.test_plan import assert_satisfiable

BUILD = {"build": 1.0}
OBSERVING = ["files", "git", "service", "sql", "files+git+sql"]
"""Every built-in ecosystem and stack: each one's tools give three looked-up values."""
INVENTORY = "tests/fixtures/ecosystems/inventory"
"""A user's ecosystem without a lookup."""


def _hard(name, n=30, seed=41):
    eco = load_ecosystem(name)
    return eco, plan_candidates(eco, n, seed, HARD_DEPTH_WEIGHTS, BUILD,
                                min_lookups=HARD_MIN_LOOKUPS)[0]


def _downstream(graph: WorkflowGraph, start: str) -> set[str]:
    """The steps that take ``start``'s output, directly or through other steps."""
    reached = {start}
    for s in graph.steps:
        if any(b.kind == "step" and b.step in reached for b in s.bind.values()):
            reached.add(s.id)
    return reached - {start}


@pytest.mark.parametrize("name", OBSERVING)
def test_hard_graphs_hold_three_looked_up_values_that_meet_in_one_step(name):
    eco, candidates = _hard(name)
    assert len(candidates) == 30
    for c in candidates:
        g = c.graph
        assert g.kind == "build" and looked_up(eco, g) >= HARD_MIN_LOOKUPS, g
        assert_satisfiable(eco, g, c.seed, max(HARD_DEPTH_WEIGHTS))
        assert len({s.tool for s in g.steps}) == len(g.steps), "each tool once"
        reads = {s.id for s in g.steps if eco.spec.tool(s.tool).effect == "read"}
        lookups = {b.step for s in g.steps for b in s.bind.values()
                   if b.kind == "step" and b.step in reads}
        assert set.intersection(*(_downstream(g, r) for r in lookups)), \
            f"the looked-up values of {g} meet in no step: three jobs, not one"


@pytest.mark.parametrize("name", OBSERVING)
def test_a_lookup_never_reads_back_an_entry_the_task_wrote(name):
    eco, candidates = _hard(name)
    for c in candidates:
        kinds = {s.id: eco.spec.tool(s.tool) for s in c.graph.steps}
        for s in c.graph.steps:
            if kinds[s.id].observes_value:
                ups = [kinds[b.step] for b in s.bind.values() if b.kind == "step"]
                assert all(u.effect == "read" for u in ups), c.graph


def test_hard_graphs_are_deep_and_mostly_end_in_work():
    eco, candidates = _hard("service", n=60, seed=7)
    steps = sorted(len(c.graph.steps) for c in candidates)
    assert steps[len(steps) // 2] >= 7 and steps[-1] <= max(HARD_DEPTH_WEIGHTS)
    writes = sum(eco.spec.tool(c.graph.steps[-1].tool).effect == "write" for c in candidates)
    assert writes >= len(candidates) // 2


def test_an_ecosystem_with_too_few_lookups_fails_at_once_and_says_why():
    eco = load_ecosystem(INVENTORY)
    assert lookup_capacity(eco) == 0
    why = lookup_gap(eco, 3)
    assert why and "at most 0" in why and "lookups are none" in why
    assert "docs/ecosystem-reference.md" in why
    with pytest.raises(PlanningError, match="at most 0"):
        next(iter_candidates(eco, 5, 41, HARD_DEPTH_WEIGHTS, BUILD, min_lookups=3))
    assert lookup_gap(eco, 0) is None
    git = load_ecosystem("git")
    assert lookup_capacity(git, ["last_commit_touching", "stalest_branch", "count_commits",
                                 "tip_subject", "tag_annotated"]) == 2
    assert lookup_gap(git, 5) and not lookup_gap(git, 4)


def test_capacity_counts_one_input_per_looked_up_value():
    """The two sql lookups that print a customer feed one input of customer_orders: one
    looked-up value there; latest_order takes the other customer, so the chain gives two."""
    sql = load_ecosystem("sql")
    assert lookup_capacity(sql, ["top_spender", "most_orders_customer", "customer_orders"]) == 1
    assert lookup_capacity(sql, ["top_spender", "most_orders_customer", "customer_orders",
                                 "latest_order", "order_lines"]) == 3
    assert lookup_capacity(load_ecosystem("service")) == 4
    with pytest.raises(PlanningError, match="fewer than 6"):
        plan_graph(sql, 1, HARD_DEPTH_WEIGHTS, min_lookups=6)


@pytest.mark.parametrize("name", ["files", "git", "sql", "service", "files+git+sql"])
def test_without_min_lookups_the_run_plans_as_before(name):
    """Default kinds (fixes included): the default and an explicit 0 plan the same graphs,
    seeds and ids."""
    eco = load_ecosystem(name)
    default = [(c.candidate_id, c.graph.fingerprint(), d) for c, d in
               iter_candidates(eco, 40, 7)]
    zero = [(c.candidate_id, c.graph.fingerprint(), d) for c, d in
            iter_candidates(eco, 40, 7, min_lookups=0)]
    assert default == zero
    assert [c.candidate_id for c in plan_candidates(eco, 40, 7)[0]] == [x[0] for x in zero]


def test_looked_up_counts_graphs_steps_and_stored_graphs_alike():
    eco, candidates = _hard("service", n=5)
    for c in candidates:
        stored = json.loads(c.graph.model_dump_json())
        assert looked_up(eco, c.graph) == looked_up(eco, c.graph.steps) \
            == looked_up(eco, stored) >= 3
