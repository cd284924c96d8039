"""Reconstruct tasks before any sandbox: the kind in the run's mix, the planner's layout
filter, the program and its installer, and the leak check over a workspace's files."""

import subprocess
from collections import Counter

import pytest

from environments.ecosystems import load_ecosystem
from schemas.graph import WorkflowGraph
from tasks.plan.layout import CASES_HIDDEN, CASES_PUBLIC, layout_shared, read_paths
from tasks.plan.mix import DEFAULT_KINDS, parse_kinds
from tasks.plan.planner import plan_candidates
from tasks.reconstruct.cases import Case, case_name
from tasks.reconstruct.examples import hidden_leaks
from tasks.reconstruct.program import PROGRAM, installer, memorizer_program


def test_reconstruct_is_a_kind_of_the_mix_and_not_in_the_default_one():
    assert parse_kinds("build:2,reconstruct:1") == {"build": 2.0, "reconstruct": 1.0}
    assert "reconstruct" not in DEFAULT_KINDS
    planned, _ = plan_candidates(load_ecosystem("files"), 20, run_seed=4)
    assert not any(c.graph.reconstruct for c in planned)


@pytest.mark.parametrize("name", ["files", "sql", "git"])
def test_reconstruct_graphs_read_a_layout_other_seeds_share(name):
    eco = load_ecosystem(name)
    planned, _ = plan_candidates(eco, 12, run_seed=4, kinds={"reconstruct": 1})
    assert Counter(c.graph.kind for c in planned) == {"reconstruct": 12}
    shared = [layout_shared(eco, c.graph, c.seed, CASES_PUBLIC + CASES_HIDDEN - 1)
              for c in planned]
    assert sum(shared) >= 11, shared
    for c in planned:
        assert read_paths(eco, c.graph, c.seed) <= set(eco.state_paths(c.seed)) | {
            p.rsplit("/", 1)[0] for p in eco.state_paths(c.seed)}


def test_a_service_ecosystem_plans_build_tasks_for_reconstruct_weight():
    planned, _ = plan_candidates(load_ecosystem("service"), 5, run_seed=4,
                                 kinds={"reconstruct": 1})
    assert {c.graph.kind for c in planned} == {"build"}


def test_a_reconstruct_graph_is_its_own_fingerprint_and_has_no_fault():
    planned, _ = plan_candidates(load_ecosystem("sql"), 1, run_seed=4, kinds={"reconstruct": 1})
    graph = planned[0].graph
    build = graph.model_copy(update={"reconstruct": False})
    assert graph.fingerprint() != build.fingerprint()
    with pytest.raises(ValueError, match="no fault"):
        WorkflowGraph.model_validate({**graph.model_dump(), "fault": "x"})


def test_the_installer_writes_the_program_and_the_memorizer_copies_an_example(tmp_path):
    program = "#!/usr/bin/env bash\nset -eu\ncd \"$1\"\nwc -l < in.txt > out.txt\n"
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(["bash", "-s"], input=installer(program).encode(), cwd=ws,
                          env={"TASKFACTORY_WORKDIR": str(ws), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0
    assert (ws / PROGRAM).read_text() == program
    expected = ws / "examples" / "case-a" / "expected"
    expected.mkdir(parents=True)
    (expected / "out.txt").write_text("7\n")
    (ws / PROGRAM).write_text(memorizer_program("case-a"))
    target = tmp_path / "target"
    target.mkdir()
    (target / "in.txt").write_text("a\nb\n")
    subprocess.run(["bash", str(ws / PROGRAM), str(target)], check=True)
    assert (target / "out.txt").read_text() == "7\n"  # whatever the input holds


def test_case_names_hold_no_digit():
    names = [case_name(i) for i in range(CASES_PUBLIC + CASES_HIDDEN)]
    assert names == ["case-a", "case-b", "hidden-a", "hidden-b", "hidden-c"]


def test_hidden_leaks_names_hidden_content_and_ignores_what_public_cases_share():
    shared = b"id,name,city,plan,created_at\n"
    public = Case("case-a", 1, True, {"data/c.csv": shared + b"1,Ann Lee,Oslo,pro,2026-01-02\n"},
                  [])
    hidden = Case("hidden-a", 2, False,
                  {"data/c.csv": shared + b"2,Bob Stone,Lima,free,2026-03-04\n"}, [])
    clean = {"examples/case-a/input/data/c.csv": public.files["data/c.csv"]}
    assert hidden_leaks(clean, [public, hidden]) == []
    leaked = {**clean, "notes.txt": b"x 2,Bob Stone,Lima,free,2026-03-04 y"}
    assert hidden_leaks(leaked, [public, hidden]) == ["hidden-a:data/c.csv"]


def test_sampled_values_become_arguments_where_the_command_takes_them_as_one_word():
    from tasks.reconstruct.arguments import program_arguments

    eco = load_ecosystem("sql")
    planned, _ = plan_candidates(eco, 30, run_seed=4, kinds={"reconstruct": 1})
    found = [(c.graph, a) for c in planned for a in program_arguments(eco, c.graph)]
    assert found
    for graph, a in found:
        step = next(s for s in graph.steps if s.id == a.step_id)
        assert step.bind[a.param].kind == "sample"
        command = eco.spec.tool(step.tool).command
        assert f"{{{{ {a.param} }}}}" in command or f"{{{{ {a.param} | sql }}}}" in command
    positions = [[a.position for a in program_arguments(eco, c.graph)] for c in planned]
    assert all(p == list(range(2, 2 + len(p))) for p in positions)


def test_a_value_sampled_from_an_earlier_steps_output_is_an_argument_too():
    """Whatever the sampler reads (the initial state, a file an earlier step wrote), a value
    the command takes as one word is an argument; the others stay in the program."""
    from schemas.trace import StepTrace, Trace
    from tasks.reconstruct.arguments import _form, program_arguments, reads_initial

    eco = load_ecosystem("files")
    planned, _ = plan_candidates(eco, 12, run_seed=5, kinds={"reconstruct": 1})
    late = 0
    for c in planned:
        arguments = {(a.step_id, a.param) for a in program_arguments(eco, c.graph)}
        for step in c.graph.steps:
            tool = eco.spec.tool(step.tool)
            for p in tool.params:
                word = (step.bind[p.name].kind == "sample"
                        and _form(tool.command, p.name) is not None)
                assert ((step.id, p.name) in arguments) == word
        trace = Trace.model_construct(steps=[StepTrace.model_construct(step_id=s.id)
                                             for s in c.graph.steps])
        late += sum(not reads_initial(eco, c.graph, trace, a)
                    for a in program_arguments(eco, c.graph))
    assert late >= 5


def test_arguments_described_alike_share_one_line():
    """Two commits to revert are one line, not the same description twice."""
    from tasks.reconstruct.arguments import Argument
    from tasks.reconstruct.instruction import _arguments
    from tasks.rules.readability import repeated_ngram

    args = [Argument("s1", "base", "Commit, branch or tag the branch starts at.", 2),
            Argument("s1", "commit", "Commit to revert.", 3),
            Argument("s2", "commit", "Commit to revert.", 4),
            Argument("s3", "base", "Commit, branch or tag the branch starts at.", 5)]
    lines = _arguments(args)
    assert lines[2:-1] == ["- `ARG1` and `ARG4`: commit, branch or tag the branch starts at "
                           "(one each)", "- `ARG2` and `ARG3`: commit to revert (one each)"]
    assert repeated_ngram("\n".join(lines)) == ""


@pytest.mark.parametrize("name", ["files", "git", "sql"])
def test_a_reconstruct_instruction_names_the_workspace_dir_not_a_working_directory(name):
    """The program is run on ``DIR`` and not started inside it: the ecosystem's context
    ("Your working directory holds ...", "a SQLite file in the current directory") and
    the closers speak of ``DIR`` instead."""
    from tasks.instruct.instruction import context_text
    from tasks.reconstruct.instruction import _in_dir

    context = context_text(load_ecosystem(name), "spec")
    assert "directory" in context
    assert "`DIR`" in _in_dir(context) and "directory" not in _in_dir(context)
    assert _in_dir("Paths are relative to the working directory.") == \
        "Paths are relative to `DIR`."


def test_a_looked_up_entry_is_not_reached_through_itself():
    from tasks.reconstruct.instruction import without_detours

    newest = "the newest commit on `main` that changed `ARG1`"
    oldest = "the branch whose tip commit has the oldest committer date"
    busiest = "the customer_id of the customer with the most orders"
    text = (f"a new branch that starts at the commit {newest} points to. "
            f"The subject line of the commit {oldest} points to. "
            f"Every order of the customer whose customer_id is {busiest}.")
    assert without_detours(text, [newest, oldest, busiest]) == (
        f"a new branch that starts at {newest}. "
        f"The subject line of the tip of {oldest}. "  # a branch: its tip
        "Every order of the customer with the most orders.")
    # only phrases that describe a looked-up value are said without the detour
    assert without_detours(text, []) == text
