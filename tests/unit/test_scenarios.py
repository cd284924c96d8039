"""Scenarios: validated with the spec, drawn with the run's off-scenario share, and
honoured by the planner (a scenario's graphs grow with its tools only)."""

from collections import Counter

import pytest
from pydantic import ValidationError

from environments.ecosystems import builtin_names, load_ecosystem
from schemas.ecosystem import EcosystemSpec
from tasks.plan.diversity import diversity, format_report
from tasks.plan.mix import draw_scenarios, parse_kinds
from tasks.plan.planner import plan_candidates


def _with_scenario(**scenario) -> dict:
    spec = load_ecosystem("files").spec.model_dump(by_alias=True)
    spec["scenarios"] = [{"name": "s", "motivations": ["Why."], **scenario}]
    return spec


@pytest.mark.parametrize(("scenario", "message"), [
    ({"tools": {"grep_lines": 1, "no_such_tool": 1}}, "unknown tools"),
    ({"tools": {"grep_lines": 1, "dedupe_rows": 1}}, "names repair tools"),
    ({"tools": {"grep_lines": 1, "head_lines": 1}, "faults": ["no_such_fault"]},
     "unknown fault injectors"),
    ({"tools": {"grep_lines": 1}}, "at least 2"),
    ({"tools": {"grep_lines": 1, "head_lines": 0}}, "greater than 0"),
    ({"tools": {"grep_lines": 1, "head_lines": 1}, "motivations": ["two\nlines"]},
     "pattern"),
    ({"tools": {"grep_lines": 1, "head_lines": 1},
      "motivations": [{"text": "Why.", "needs": ["csv_sum"]}]}, "need tools outside"),
    ({"tools": {"grep_lines": 1, "head_lines": 1}, "max_writes": 0}, "greater than or equal"),
])
def test_a_scenario_naming_what_does_not_fit_is_refused(scenario, message):
    with pytest.raises(ValidationError, match=message):
        EcosystemSpec.model_validate(_with_scenario(**scenario))


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_declares_five_scenarios_that_cover_its_faults(name):
    spec = load_ecosystem(name).spec
    assert len(spec.scenarios) >= 5
    framed = {f for s in spec.scenarios for f in s.faults}
    assert framed == {f.name for f in spec.faults.injectors} if spec.faults else not framed
    for s in spec.scenarios:
        assert all("`" not in m.text and not any(c.isdigit() for c in m.text)
                   for m in s.motivations)


@pytest.mark.parametrize("name", builtin_names())
def test_graphs_planned_in_a_scenario_use_its_tools_and_every_scenario_is_planned(name):
    eco = load_ecosystem(name)
    candidates, _ = plan_candidates(eco, 60, 3, off_scenario=0)
    used = Counter(c.graph.scenario for c in candidates)
    assert set(used) - {None} == {s.name for s in eco.spec.scenarios}
    assert used[None] <= 6  # only where a scenario's graphs ran out (few, at this size)
    for c in candidates:
        if c.graph.scenario is None:
            continue
        scenario = eco.spec.scenario(c.graph.scenario)
        fault = eco.spec.fault(c.graph.fault) if c.graph.fault else None
        own = set(fault.repair) | set(fault.report or ()) if fault else set()  # its report
        assert {s.tool for s in c.graph.steps} <= set(scenario.tools) | own
        assert c.graph.fault is None or c.graph.fault in scenario.faults
    report = format_report(diversity(eco, candidates, 0))
    assert "scenarios: " in report and all(s.name in report for s in eco.spec.scenarios)


@pytest.mark.parametrize("name", builtin_names())
def test_a_scenario_with_a_bound_on_writes_plans_no_graph_over_it(name):
    """Every shape (chains, fans, joins) keeps to it; a fault's repairs do not count."""
    eco = load_ecosystem(name)
    bounded = {s.name: s.max_writes for s in eco.spec.scenarios if s.max_writes}
    candidates, _ = plan_candidates(eco, 300, 11, off_scenario=0)
    seen = Counter()
    for c in candidates:
        bound = bounded.get(c.graph.scenario or "")
        if bound is None:
            continue
        tools = [eco.spec.tool(s.tool) for s in c.graph.steps]
        writes = sum(1 for t in tools if t.effect == "write" and not t.repair)
        assert writes <= bound, (c.graph.scenario, [t.name for t in tools])
        seen[writes == bound] += 1
    assert not bounded or seen[True] > 0  # the bound is reached, not just never approached


@pytest.mark.parametrize("name", builtin_names())
def test_a_build_graph_does_the_work_its_motivation_promises(name):
    """"Sales wants its most loyal customers" is not opened over an export of every
    delivered order: a scenario's build graph uses a tool one of its lines needs, and the
    instruction opens with such a line."""
    eco = load_ecosystem(name)
    candidates, _ = plan_candidates(eco, 60, 7, kinds={"build": 1.0}, off_scenario=0)
    checked = 0
    for c in candidates:
        if c.graph.scenario is None:
            continue
        scenario = eco.spec.scenario(c.graph.scenario)
        tools = {s.tool for s in c.graph.steps}
        fitting = scenario.fitting(tools)
        assert fitting, (c.graph.scenario, sorted(tools))
        checked += any(m.needs for m in scenario.motivations)
    assert checked >= 30


def test_a_scenario_scoped_to_a_state_type_binds_only_values_of_it():
    """The notes review reads the notes under docs/, not whichever text file fits."""
    eco = load_ecosystem("files")
    assert eco.spec.scenario("docs_review").state == ["file.text.lines.prose"]
    candidates, _ = plan_candidates(eco, 60, 3, kinds={"build": 1.0}, off_scenario=0)
    bound = [b.value for c in candidates if c.graph.scenario == "docs_review"
             for s in c.graph.steps for b in s.bind.values() if b.kind == "state"]
    assert bound and all(v.startswith("docs/") for v in bound), bound


def test_the_off_scenario_share_is_honoured():
    eco = load_ecosystem("sql")
    everywhere, _ = plan_candidates(eco, 30, 5, off_scenario=1)
    assert {c.graph.scenario for c in everywhere} == {None}
    drawn = [draw_scenarios(eco, i, 5, None, 0.25, Counter()) for i in range(400)]
    assert 0.15 < sum(not d for d in drawn) / len(drawn) < 0.35
    # a fix candidate's scenarios are those that list its fault, the drawn one first
    for i in range(50):
        order = draw_scenarios(eco, i, 5, "orphaned_items", 0, Counter())
        assert order and all("orphaned_items" in eco.spec.scenario(s).faults for s in order)
        assert len(set(order)) == len(order)


def test_kind_weights_name_what_is_wrong():
    assert parse_kinds("build:2,fix") == {"build": 2.0, "fix": 1.0}
    with pytest.raises(ValueError, match="unknown kind 'mend'"):
        parse_kinds("build:1,mend:1")
    with pytest.raises(ValueError, match="weights >= 0, got 'fix:x'"):
        parse_kinds("fix:x")
    with pytest.raises(ValueError, match="at least one weight must be positive"):
        parse_kinds("build:0")


@pytest.mark.parametrize("report", [["dedupe_rows"], ["grep_lines"], ["no_such_tool"]])
def test_a_fault_reporting_with_no_read_of_the_ecosystem_is_refused(report):
    """A fix's report is a read: a repair tool, a write or an unknown name is refused."""
    spec = load_ecosystem("files").spec.model_dump(by_alias=True)
    spec["faults"]["injectors"][0]["report"] = report
    with pytest.raises(ValidationError, match=r"no read tools of the ecosystem"):
        EcosystemSpec.model_validate(spec)
    spec["faults"]["injectors"][0]["report"] = ["count_lines"]
    EcosystemSpec.model_validate(spec)
