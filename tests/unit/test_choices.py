"""A reconstruct program's choices without a sandbox: which hidden cases test them, the
program with the first example's entries hard-coded (run with the real bash on real
files), and an instruction that states the rule instead of one case's values."""

import subprocess

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace, Trace
from schemas.verifier import Check
from tasks.core.commands import render_command
from tasks.instruct.instruction import render_instruction
from tasks.instruct.preserve import check_items_preserved, check_preserved, required_literals
from tasks.reconstruct.choices import (
    choice_steps,
    hardcoded_trace,
    kept,
    pick_hidden,
    recorder,
    untested,
)
from tasks.reconstruct.instruction import stated
from tasks.reconstruct.program import program_script, program_trace
from tasks.rules.markdown import code_spans

FILES = load_ecosystem("files")
ORDERS, CUSTOMERS = "data/orders.csv", "data/customers.csv"


def _trace(column: bool) -> tuple[WorkflowGraph, Trace]:
    """longest_csv, then the checksum of what it found (or, with ``column``, one sampled
    column of it): as executed on a seed whose longest CSV is ``data/orders.csv``."""
    second = (Step(id="s2", tool="csv_column", bind={
        "path": Binding(kind="step", step="s1"),
        "column": Binding(kind="sample", facet="csv_column", of="path"),
        "out": Binding(kind="literal", value="out/column_values.txt")}) if column else
        Step(id="s2", tool="checksum", bind={"path": Binding(kind="step", step="s1")}))
    graph = WorkflowGraph(ecosystem="files", shape="chain", reconstruct=True, steps=[
        Step(id="s1", tool="longest_csv", bind={}), second])
    args = ({"path": ORDERS, "column": "status", "out": "out/column_values.txt"} if column
            else {"path": ORDERS})
    done = Observation(exit_code=0, stdout=ORDERS + "\n", stderr="", duration_s=0.01)
    steps = [StepTrace(step_id="s1", tool="longest_csv", args={}, output=ORDERS,
                       command=render_command(FILES.spec.tool("longest_csv"), {}),
                       observation=done, output_type="file.text.csv"),
             StepTrace(step_id="s2", tool=second.tool, args=args, output="x",
                       command=render_command(FILES.spec.tool(second.tool), args),
                       observation=done, output_type="text")]
    return graph, Trace(steps=steps, answer=None if column else "x")


def test_hidden_cases_are_picked_so_that_each_choice_meets_a_new_entry():
    public = [{"s1": ORDERS}, {"s1": ORDERS}]
    found = [{"s1": ORDERS}] * 4 + [{"s1": CUSTOMERS}] + [{"s1": ORDERS}]
    assert pick_hidden(["s1"], public, found, 3) == [0, 1, 4]
    assert untested(["s1"], public, [found[i] for i in (0, 1, 4)]) == []
    assert untested(["s1"], public, found[:3]) == ["s1"]
    assert pick_hidden(["s1"], public, found[:4], 3) == [0, 1, 2]  # none varies: earliest
    # two choices: the case that tests both comes first, then the earliest others
    two = [{"s1": ORDERS, "s2": "7"}, {"s1": ORDERS, "s2": "9"},
           {"s1": CUSTOMERS, "s2": "7"}, {"s1": CUSTOMERS, "s2": "8"}]
    public2 = [{"s1": ORDERS, "s2": "7"}]
    assert pick_hidden(["s1", "s2"], public2, two, 1) == [3]
    assert pick_hidden(["s1", "s2"], public2, two, 2) == [0, 3]
    assert pick_hidden(["s1", "s2"], public2, two[:3], 1) == [1]  # one slot: one tested
    assert untested(["s1", "s2"], public2, [two[1]]) == ["s1"]
    assert pick_hidden(["s1", "s2"], public2, two[:3], 2) == [1, 2]
    # a case the program recorded nothing for never counts as another entry of a choice
    # that it recorded on the public ones
    assert untested(["s1"], public, [{"s1": ORDERS}, {}]) == []
    assert untested(["s1"], [{}], [{}]) == ["s1"]


def _workspace(tmp_path, orders: int, customers: int):
    (tmp_path / "data").mkdir()
    (tmp_path / ORDERS).write_text("".join(f"o{i}\n" for i in range(orders)))
    (tmp_path / CUSTOMERS).write_text("".join(f"c{i}\n" for i in range(customers)))
    return tmp_path


def _run(program: str, where, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-s", "--", str(where)], input=program + "\n".join(extra),
                          capture_output=True, text=True, timeout=60)


def test_the_hardcoded_program_prints_the_first_examples_entry_where_the_rule_finds_another(
        tmp_path):
    graph, trace = _trace(column=False)
    program = program_trace(FILES, graph, trace)
    assert [st.step_id for st in choice_steps(FILES, program)] == ["s1"]
    assert kept(FILES, program) == {"s1"}  # captured in v_s1, so a case records it
    here = _workspace(tmp_path, orders=3, customers=9)  # the rule: customers.csv
    keep = tmp_path / "choices"
    ran = _run(program_script(program), here, recorder(["s1"], str(keep)))
    assert ran.returncode == 0, ran.stderr
    assert keep.read_text() == CUSTOMERS + "\0"
    want = subprocess.run(["sha256sum", CUSTOMERS], cwd=here, capture_output=True, text=True)
    assert (here / "answer.txt").read_text().strip() == want.stdout[:64]
    hard = program_script(hardcoded_trace(FILES, program))
    assert "longest_csv" not in hard and f"printf '%s\\n' {ORDERS}" in hard
    ran = _run(hard, here, recorder(["s1"], str(keep)))
    assert ran.returncode == 0, ran.stderr
    assert keep.read_text() == ORDERS + "\0"  # the first example's entry, not the rule's
    orders = subprocess.run(["sha256sum", ORDERS], cwd=here, capture_output=True, text=True)
    assert (here / "answer.txt").read_text().strip() == orders.stdout[:64]


def test_the_rule_names_arguments_and_lookups_never_the_first_cases_values():
    graph, trace = _trace(column=True)
    checks = [Check(kind="state", section="files", key="out/column_values.txt",
                    expected="x", compare="text")]
    rule = stated(FILES, graph, trace, checks)
    inner = render_instruction(FILES, graph, rule.trace, 1, "spec", rule.checks,
                               rule.described)
    assert "the `ARG1` column of the CSV file under `data/` with the most lines" in inner.text
    spans = set(code_spans(inner.text))
    assert {"ARG1", "out/column_values.txt", "data/"} <= spans
    assert not spans & {ORDERS, "status"}, spans
    required = required_literals(FILES.spec, graph, rule.trace, rule.checks, "spec")
    check_preserved(inner.text, required)
    check_items_preserved(inner.items, required)
    # the same trace rendered as a build task's spec writes both values
    plain = render_instruction(FILES, graph, trace, 1, "spec", checks)
    assert {ORDERS, "status"} <= set(code_spans(plain.text))
