"""A replacement step stays in the task's story: a fix graph's in the fault's, a scenario's
graph in the scenario's tools (tasks/execute/substitute.py)."""

from dataclasses import replace

from environments.ecosystems import load_ecosystem
from schemas.ecosystem import Scenario
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace
from tasks.execute.substitute import substitutes

FILES = load_ecosystem("files")


def _graph(fault: str | None, scenario: str | None = None
           ) -> tuple[WorkflowGraph, Candidate, list[StepTrace]]:
    """Repair a CRLF file, keep its first lines, then grep them (the step to replace)."""
    sample = Binding(kind="sample", facet="n")
    steps = [Step(id="s1", tool="find_crlf_file", bind={}),
             Step(id="s2", tool="unix_line_endings",
                  bind={"path": Binding(kind="step", step="s1")}),
             Step(id="s3", tool="head_lines", bind={
                 "path": Binding(kind="step", step="s2"), "n": sample,
                 "out": Binding(kind="literal", value="out/first_lines.txt")}),
             Step(id="s4", tool="grep_lines", bind={
                 "path": Binding(kind="step", step="s3"),
                 "pattern": Binding(kind="sample", facet="pattern"),
                 "out": Binding(kind="literal", value="out/matching_lines.txt")})]
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=steps, fault=fault,
                          scenario=scenario)
    seen = Observation(exit_code=0, stdout="", stderr="", duration_s=0)
    done = [StepTrace(step_id=s, tool=t, args={}, command="true", observation=seen, output=o,
                      output_type="file.text.lines")
            for s, t, o in (("s1", "find_crlf_file", "notes/a.txt"),
                            ("s2", "unix_line_endings", "notes/a.txt"),
                            ("s3", "head_lines", "out/first_lines.txt"))]
    cand = Candidate(candidate_id="c", index=0, ecosystem="files", seed=3, graph=graph)
    return graph, cand, done


def _reads_s3(step: Step) -> bool:
    return any(b.kind == "step" and b.step == "s3" for b in step.bind.values())


def test_a_fix_graph_replaces_a_step_only_by_one_building_on_the_same_result():
    files = FILES.seed_state(3)
    graph, cand, done = _graph(None)
    build = substitutes(FILES, cand, graph, done, files, graph.steps[3])
    assert any(not _reads_s3(s) for s in build)  # a build task may read a seeded file instead
    graph, cand, done = _graph("windows_line_endings")
    fix = substitutes(FILES, cand, graph, done, files, graph.steps[3])
    assert fix and all(_reads_s3(s) for s in fix)


def test_a_scenario_graph_is_repaired_with_the_scenario_tools_only():
    """A scenario of log work (its own here, so the built-in recipes can change) repairs a
    failing grep with its own sort, never with a CSV column that fits the type too."""
    files = FILES.seed_state(3)
    graph, cand, done = _graph(None)
    anywhere = {s.tool for s in substitutes(FILES, cand, graph, done, files, graph.steps[3])}
    story = {"most_errors_log", "grep_lines", "sort_unique", "count_lines"}
    assert anywhere - story  # outside a scenario, tools of other work replace the step too
    logs = Scenario(name="log_review", motivations=["The logs need a look."],
                    tools=dict.fromkeys(story, 1.0))
    eco = replace(FILES, spec=FILES.spec.model_copy(update={"scenarios": [logs]}))
    graph, cand, done = _graph(None, "log_review")
    inside = {s.tool for s in substitutes(eco, cand, graph, done, files, graph.steps[3])}
    assert inside and inside <= story and inside == anywhere & story


def test_a_fix_report_is_replaced_only_by_another_report_the_fault_names():
    files = FILES.seed_state(3)
    csv = sorted(p for p in files if p.startswith("data/") and p.endswith(".csv"))[0]
    seen = Observation(exit_code=0, stdout="", stderr="", duration_s=0)
    done = [StepTrace(step_id=s, tool=t, args={}, command="true", observation=seen, output=csv,
                      output_type="file.text.csv")
            for s, t in (("s1", "find_bom_file"), ("s2", "strip_bom"))]
    report = Step(id="s3", tool="count_words", bind={"path": Binding(kind="step", step="s2")})
    steps = [Step(id="s1", tool="find_bom_file", bind={}),
             Step(id="s2", tool="strip_bom", bind={"path": Binding(kind="step", step="s1")}),
             report]
    options = {}
    for fault in (None, "byte_order_mark"):
        graph = WorkflowGraph(ecosystem="files", shape="chain", steps=steps, fault=fault)
        cand = Candidate(candidate_id="c", index=0, ecosystem="files", seed=3, graph=graph)
        options[fault] = {s.tool for s in substitutes(FILES, cand, graph, done, files, report)}
    named = set(FILES.spec.fault("byte_order_mark").report or [])
    assert options[None] - named  # reads of the file that answer nothing the symptom asks
    assert options["byte_order_mark"] == options[None] & named, options
