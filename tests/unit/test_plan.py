"""Planning: every planned graph is satisfiable by construction, deterministic, distinct."""

from hypothesis import given, settings
from hypothesis import strategies as st

from environments.ecosystems import load_ecosystem
from schemas.ecosystem import type_satisfies
from tasks.plan import plan_candidates, plan_chain

ECO = load_ecosystem("files")


def assert_satisfiable(graph, seed, max_depth):
    state = {p: ECO.state_type(p) for p in ECO.seed_state(seed)}
    outputs = {}
    assert 1 <= graph.depth <= max_depth
    for step in graph.steps:
        tool = ECO.spec.tool(step.tool)
        assert set(step.bind) == {p.name for p in tool.params}
        for p in tool.params:
            b = step.bind[p.name]
            if p.sample:
                assert b.kind == "sample" and b.facet == p.sample.facet and b.of == p.sample.of
            elif p.type == "path.out":
                assert b.kind == "literal" and b.value.endswith("." + p.ext)
                assert b.value not in state, "an output path must not overwrite seeded state"
            elif b.kind == "step":
                assert type_satisfies(outputs[b.step], p.type)
            else:
                assert b.kind == "state" and b.value in state
                assert type_satisfies(state[b.value], p.type)
        outputs[step.id] = tool.returns.type


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31 - 1), depth=st.integers(1, 4))
def test_planned_chains_are_satisfiable(seed, depth):
    assert_satisfiable(plan_chain(ECO, seed, depth), seed, depth)


def test_planning_is_deterministic_and_fingerprints_distinct():
    a, stats = plan_candidates(ECO, 30, run_seed=7)
    b, _ = plan_candidates(ECO, 30, run_seed=7)
    assert [c.model_dump() for c in a] == [c.model_dump() for c in b]
    assert len({c.graph.fingerprint() for c in a}) == 30
    assert stats.planned == 30
    c, _ = plan_candidates(ECO, 30, run_seed=8)
    assert [x.candidate_id for x in a] != [x.candidate_id for x in c]


def test_chains_only_follow_write_steps():
    for cand in plan_candidates(ECO, 40, run_seed=3)[0]:
        for step in cand.graph.steps[:-1]:
            assert ECO.spec.tool(step.tool).effect == "write"
