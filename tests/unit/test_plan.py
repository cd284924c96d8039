"""Planning: every planned graph is satisfiable by construction, deterministic, diverse."""

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from environments.ecosystems import builtin_names, load_ecosystem
from schemas.ecosystem import binds, type_satisfies
from tasks.plan.diversity import diversity, format_report
from tasks.plan.planner import (
    DEFAULT_DEPTH_WEIGHTS,
    candidate_seed,
    consumes_observed,
    drawn_depth,
    parse_depth_weights,
    plan_candidates,
    plan_graph,
)

ECOSYSTEMS = {name: load_ecosystem(name) for name in builtin_names()}


def assert_satisfiable(eco, graph, seed, max_depth):
    # the layout is the seed's paths (test_layout_matches_generated_paths), without content
    state = {p: t for p in eco.state_paths(seed) if (t := eco.state_type(p))}
    outputs, compares, ids = {}, {}, [s.id for s in graph.steps]
    assert 1 <= graph.depth <= max_depth
    changed_in_place, read_from_state = set(), set()
    for i, step in enumerate(graph.steps):
        tool = eco.spec.tool(step.tool)
        assert set(step.bind) == {p.name for p in tool.params}
        if tool.effect == "read" and i < len(graph.steps) - 1:
            assert tool.observes_value, "only a lookup may be read before the last step"
            assert any(b.kind == "step" and b.step == step.id
                       for later in graph.steps[i + 1:] for b in later.bind.values()), \
                "a lookup inside a graph feeds a later step"
        for p in tool.params:
            b = step.bind[p.name]
            if p.sample:
                assert b.kind == "sample" and b.facet == p.sample.facet and b.of == p.sample.of
            elif p.fresh:
                assert b.kind == "literal" and b.value not in state
            elif b.kind == "step":
                assert ids.index(b.step) < i, "inputs come from earlier steps (no cycles)"
                assert binds(p, outputs[b.step], compares[b.step]), (step, p.name)
            else:
                assert b.kind == "state" and b.value in state, (step, p.name)
                assert type_satisfies(state[b.value], p.type)
                target = tool.returns.from_param == p.name and tool.effect == "write"
                (changed_in_place if target else read_from_state).add(b.value)
        outputs[step.id], compares[step.id] = tool.returns.type, tool.returns.compare
    assert not changed_in_place & read_from_state, "a state value changed in place is read"


@pytest.mark.parametrize("name", sorted(ECOSYSTEMS))
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_planned_graphs_are_satisfiable(name, seed):
    eco = ECOSYSTEMS[name]
    assert_satisfiable(eco, plan_graph(eco, seed), seed, max(DEFAULT_DEPTH_WEIGHTS))


@pytest.mark.parametrize("name", sorted(ECOSYSTEMS))
def test_default_mix_graphs_are_satisfiable(name):
    """Fix graphs included: a fault's repair output feeds later steps only where it binds
    (a checksum never hashes a config its verifier compares as JSON)."""
    eco = ECOSYSTEMS[name]
    for c in plan_candidates(eco, 300, run_seed=11)[0]:
        assert_satisfiable(eco, c.graph, c.seed, max(DEFAULT_DEPTH_WEIGHTS))


def test_a_checksum_hashes_seeded_files_and_exact_outputs_only():
    """Over the default mix, ``checksum`` (``exact_bytes``) is still planned, and it takes
    a step's output only when that output is compared byte for byte."""
    eco = ECOSYSTEMS["files"]
    assert eco.spec.tool("checksum").param("path").exact_bytes
    fed_by = Counter()
    for c in plan_candidates(eco, 300, run_seed=11)[0]:
        tools = {s.id: s.tool for s in c.graph.steps}
        for s in c.graph.steps:
            b = s.bind.get("path")
            if s.tool == "checksum" and b is not None:
                compare = eco.spec.tool(tools[b.step]).returns.compare if b.kind == "step" \
                    else None
                fed_by[compare] += 1
    assert sum(fed_by.values()) >= 5
    assert set(fed_by) <= {None, "exact"}, fed_by


@pytest.mark.parametrize("name", sorted(ECOSYSTEMS))
def test_diversity_and_coverage_over_1000_graphs(name):
    """A run's planner rejects duplicate fingerprints (re-planning, bounded) and counts
    them; at least 80% of 1,000 planned graphs must be distinct, every tool used."""
    eco = ECOSYSTEMS[name]
    candidates, stats = plan_candidates(eco, 1000, run_seed=5)
    assert len({c.graph.fingerprint() for c in candidates}) >= 800
    assert stats.duplicates_replanned >= 0 and stats.planned == 1000
    used = Counter(s.tool for c in candidates for s in c.graph.steps)
    assert set(used) == {t.name for t in eco.spec.tools}
    repeated = [c.graph for c in candidates
                if len({s.tool for s in c.graph.steps}) < len(c.graph.steps)]
    assert repeated == []  # a task uses each tool once
    assert len({c.graph.shape for c in candidates}) >= 2  # which shapes fit depends on tools


def test_depth_weights_bound_the_depth():
    eco = ECOSYSTEMS["files"]
    weights = parse_depth_weights("2:1,3:1")
    for i in range(200):
        seed = candidate_seed(1, i)
        assert_satisfiable(eco, plan_graph(eco, seed, weights), seed, 3)
    with pytest.raises(ValueError, match="depth:weight"):
        parse_depth_weights("two")
    with pytest.raises(ValueError, match="1..8"):
        parse_depth_weights("9:1")


def test_planning_is_deterministic():
    eco = ECOSYSTEMS["files"]
    a, _ = plan_candidates(eco, 30, run_seed=7)
    b, _ = plan_candidates(eco, 30, run_seed=7)
    assert [c.model_dump() for c in a] == [c.model_dump() for c in b]
    c, _ = plan_candidates(eco, 30, run_seed=8)
    assert [x.candidate_id for x in a] != [x.candidate_id for x in c]


def test_layout_matches_generated_paths():
    for eco in ECOSYSTEMS.values():
        for seed in range(20):
            assert eco.state_paths(seed) == sorted(eco.seed_state(seed))


@pytest.mark.parametrize("name", sorted(ECOSYSTEMS))
def test_lookups_feed_later_steps_in_most_multi_step_graphs(name):
    """Every built-in has lookups; the planner puts them first or in the middle, where a
    later step takes their value, in most multi-step build graphs, and the report says so.
    (A fix graph starts with its fault's repair steps instead: a lookup of the defect, or
    a repair whose sampled target is the defect, tests/integration/test_fault_injectors.)"""
    eco = ECOSYSTEMS[name]
    assert sum(t.observes_value for t in eco.spec.tools) >= 2
    candidates, stats = plan_candidates(eco, 300, 11, kinds={"build": 1})
    mid = [c.graph for c in candidates
           if any(eco.spec.tool(s.tool).effect == "read" for s in c.graph.steps[:-1])]
    assert mid, "no graph reads something before its last step"
    report = diversity(eco, candidates, stats.duplicates_replanned)
    multi = [c.graph for c in candidates if len(c.graph.steps) > 1]
    assert report.multi_step == len(multi)
    assert report.observed == sum(consumes_observed(g, eco) for g in multi)
    assert report.observed_share > 0.5
    assert f"observed values: {report.observed} of {report.multi_step}" in format_report(report)


def test_the_report_counts_graphs_shallower_than_their_drawn_depth():
    """No graph is deeper than the depth drawn for its seed (``drawn_depth`` is the
    planner's own draw); git's chains often stop early, and the report says how many and
    at which output types."""
    eco = ECOSYSTEMS["git"]
    candidates, stats = plan_candidates(eco, 200, 11)
    drawn = {c.candidate_id: drawn_depth(c.seed, fix_steps=len(
        eco.spec.fault(c.graph.fault).repair) if c.graph.fault else 0) for c in candidates}
    assert all(c.graph.depth <= drawn[c.candidate_id] for c in candidates)
    short = [c for c in candidates if c.graph.depth < drawn[c.candidate_id]]
    report = diversity(eco, candidates, stats.duplicates_replanned)
    assert short and report.shallower == len(short)
    assert sum(report.shallower_ends.values()) == len(short)
    assert f"shallower than drawn: {len(short)} of 200 graphs" in format_report(report)


@pytest.mark.parametrize("name", builtin_names())
def test_a_fix_graph_is_about_its_fault(name):
    """Every step of a fix graph is a repair step or uses what one made: where nothing can
    take the repaired entry, the task is the repair alone, with no unrelated errand."""
    from tasks.dataset.report.compositions import findings

    eco = ECOSYSTEMS[name]
    fixes = [c.graph for seed in (5, 11) for c in plan_candidates(eco, 100, seed)[0]
             if c.graph.fault]
    assert fixes
    for g in fixes:
        repairs = len(eco.spec.fault(g.fault).repair)
        assert findings({"steps": []}, [], g.model_dump(), repairs) == set(), g


@pytest.mark.parametrize("name", builtin_names())
def test_a_fix_graph_builds_nothing_on_its_repair(name):
    """One job: after the repair steps at most one read, and it reads the repaired entry (a
    report on what the fix left).  Before, a write chain followed: a subtask filed under
    the repaired ticket and then resolved, a release-candidate tag on the restored tag."""
    eco = ECOSYSTEMS[name]
    fixes = [c.graph for seed in (5, 11) for c in plan_candidates(eco, 100, seed)[0]
             if c.graph.fault]
    followed = 0
    for g in fixes:
        repairs = len(eco.spec.fault(g.fault).repair)
        after = g.steps[repairs:]
        assert len(after) <= 1, g
        for step in after:
            followed += 1
            assert eco.spec.tool(step.tool).effect == "read", g
            assert any(b.step == g.steps[repairs - 1].id for b in step.bind.values()), g
    assert followed, name


def test_no_write_sets_again_a_field_of_a_record_the_task_created():
    """A ticket created and then resolved or escalated is one job said twice: the planner
    follows each created record through the writes on it and binds none whose
    ``returns.changes`` it has set (the creation's arguments and ``settles`` included).
    Before, 27 of 88 service tasks of one run did.  Assigning a new ticket stays."""
    eco = ECOSYSTEMS["service"]
    tools = {t.name: t for t in eco.spec.tools}
    assigned = 0
    for seed in (5, 23):
        for c in plan_candidates(eco, 150, seed)[0]:
            fields: dict[str, set[str]] = {}  # step id -> fields the task set on its record
            for step in c.graph.steps:
                tool = tools[step.tool]
                target = step.bind.get(tool.returns.from_param or "")
                if tool.creates:
                    fields[step.id] = set(tool.returns.settles) | {p.name for p in tool.params}
                elif target is not None and target.kind == "step" and target.step in fields:
                    assert not fields[target.step] & set(tool.returns.changes), c.graph
                    assigned += step.tool == "assign_ticket"
                    fields[step.id] = fields[target.step] | set(tool.returns.changes)
    assert assigned


def test_a_fix_already_planned_becomes_a_build_candidate():
    """A repair nothing builds on is one graph per fault: a fix candidate whose re-plans
    all repeat it is planned as a build candidate instead of a duplicate."""
    eco = ECOSYSTEMS["service"]
    candidates, _ = plan_candidates(eco, 50, 11)
    fixes = [c.graph.fingerprint() for c in candidates if c.graph.fault]
    assert fixes and len(fixes) == len(set(fixes))


def test_no_step_takes_an_alias_a_step_made():
    """A new tag on a commit is that commit: over the default mix the tags are still
    planned, and no step branches from (or reads through) one the task made."""
    eco = ECOSYSTEMS["git"]
    aliases = {t.name for t in eco.spec.tools if t.returns.alias}
    assert aliases >= {"create_tag", "tag_annotated", "tag_snapshot"}
    planned = 0
    for c in plan_candidates(eco, 300, run_seed=11)[0]:
        made = {s.id for s in c.graph.steps if s.tool in aliases}
        planned += bool(made)
        assert not [s.id for s in c.graph.steps for b in s.bind.values()
                    if b.kind == "step" and b.step in made], c.graph
    assert planned >= 10


def test_no_write_sets_again_a_field_an_earlier_write_changed_on_that_entry():
    """A ticket closed and then set to another status (or resolved) is one job said twice,
    which execution throws away as overwritten: the planner does not plan it."""
    eco = ECOSYSTEMS["service"]
    candidates, _ = plan_candidates(eco, 300, run_seed=13)
    checked = 0
    for c in candidates:
        changed: dict[str, set[str]] = {}  # step id -> fields set on its entry so far
        for step in c.graph.steps:
            tool = eco.spec.tool(step.tool)
            target = tool.returns.from_param
            if tool.effect != "write" or not target or not tool.returns.changes:
                continue
            b = step.bind.get(target)
            before = changed.get(b.step, set()) if b is not None and b.kind == "step" else set()
            assert not before & set(tool.returns.changes), (c.graph.fault, [
                s.tool for s in c.graph.steps])
            changed[step.id] = before | set(tool.returns.changes)
            checked += bool(before)
    assert checked >= 5  # chains of in-place writes on one entry are still planned
