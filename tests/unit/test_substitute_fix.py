"""A replacement step in a fix graph stays in the fault's story (tasks/execute/substitute.py)."""

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace
from tasks.execute.substitute import substitutes

FILES = load_ecosystem("files")


def _graph(fault: str | None) -> tuple[WorkflowGraph, Candidate, list[StepTrace]]:
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
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=steps, fault=fault)
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
