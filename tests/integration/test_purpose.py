"""Purposeless steps on the real engine: a write step that changes nothing, copies its
input, or undoes an earlier step is rejected as ``execute/purposeless`` (naming why), and
repaired like a degenerate step when repairs are allowed."""

import os

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import ecosystem, sandbox_opener
from flows.run.providers import close_run
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from tasks.core.failures import StageFailure
from tasks.execute.realize import LiveEnvironment
from tasks.execute.run_graph import execute_graph

pytestmark = pytest.mark.docker
RUN = f"itest-purpose-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _close_run():
    yield
    close_run(RUN)


def _run(name: str, steps: list[Step], max_repairs: int = 0):
    eco = ecosystem(name)
    candidate = Candidate(candidate_id=f"purpose-{name}", index=0, ecosystem=name, seed=7,
                          graph=WorkflowGraph(ecosystem=name, shape="chain", steps=steps))
    with LiveEnvironment(eco, candidate.seed, sandbox_opener(eco, DockerConfig(), RUN,
                                                             candidate)) as env:
        return execute_graph(env, eco, candidate, max_repairs=max_repairs)


def _lit(value: str) -> Binding:
    return Binding(kind="literal", value=value)


def _copy_of_input() -> list[Step]:
    """The distinct first names of the customers, then "the first 100000 lines" of that:
    the same file again."""
    return [
        Step(id="s1", tool="csv_column", bind={
            "path": Binding(kind="state", value="data/customers.csv"),
            "column": _lit("first_name"), "out": _lit("out/names.txt")}),
        Step(id="s2", tool="sort_unique", bind={
            "path": Binding(kind="step", step="s1"), "out": _lit("out/sorted.txt")}),
        Step(id="s3", tool="head_lines", bind={
            "path": Binding(kind="step", step="s2"), "n": _lit("100000"),
            "out": _lit("out/all.txt")}),
    ]


def test_a_step_whose_output_equals_its_input_is_purposeless():
    with pytest.raises(StageFailure) as err:
        _run("files", _copy_of_input())
    assert (err.value.stage, err.value.reason) == ("execute", "purposeless")
    assert err.value.detail == ("s3 head_lines: its output out/all.txt equals its input "
                                "out/sorted.txt")


def test_a_purposeless_step_is_repaired_like_a_degenerate_one():
    trace, graph = _run("files", _copy_of_input(), max_repairs=2)
    assert [r.reason for r in trace.repairs][:1] == ["purposeless"]
    assert [s.tool for s in graph.steps][:2] == ["csv_column", "sort_unique"]
    assert graph.steps[2:] == [] or graph.steps[2].tool != "head_lines" \
        or graph.steps[2].bind["n"] != _lit("100000")
    written = [st.digest for st in trace.steps if st.digest is not None]
    assert len(written) == len(set(written)) >= 2  # every kept write wrote something new


def _service_pair(first: str, second: str, param: str, value: str) -> StageFailure:
    """``first`` on an active ticket, then ``second`` on the same ticket, both with
    ``param`` = ``value``: the failure the second step raises."""
    steps = [
        Step(id="s1", tool=first, bind={
            "ticket": Binding(kind="sample", facet="active_ticket"), param: _lit(value)}),
        Step(id="s2", tool=second, bind={
            "ticket": Binding(kind="step", step="s1"), param: _lit(value)}),
    ]
    with pytest.raises(StageFailure) as err:
        _run("service", steps)
    assert err.value.reason == "purposeless"
    return err.value


def test_a_write_that_changes_nothing_is_purposeless():
    failure = _service_pair("set_priority", "set_priority", "priority", "urgent")
    assert failure.detail == "s2 set_priority: it changes nothing"


def test_a_write_that_undoes_an_earlier_one_is_purposeless():
    failure = _service_pair("add_label", "remove_label", "label", "needs-review")
    assert failure.detail.startswith("s2 remove_label: it leaves tickets/")
    assert failure.detail.endswith("as it was before step s1 changed it")


def _update_then(read: str, **bind: Binding) -> list[Step]:
    """The orders of the customer with the most delivered spending copied to a table,
    their delivered totals set to 0.5 (an intermediate result: only the read sees it),
    then ``read`` over that table."""
    db = Binding(kind="state", value="shop.db")
    return [
        Step(id="s1", tool="top_spender", bind={"db": db, "status": _lit("delivered")}),
        Step(id="s2", tool="customer_orders", bind={
            "db": db, "customer": Binding(kind="step", step="s1"), "out": _lit("mine")}),
        Step(id="s3", tool="update_rows", bind={
            "db": db, "table": Binding(kind="step", step="s2"),
            "where_column": _lit("status"), "where_value": _lit("delivered"),
            "column": _lit("total"), "value": _lit("0.5")}),
        Step(id="s4", tool=read, bind={"db": db, "table": Binding(kind="step", step="s3"),
                                       **bind}),
    ]


def test_an_answer_that_does_not_need_the_last_write_makes_it_purposeless():
    """Counting rows cannot see totals set: the reference minus the update (the gate's
    partial control) would pass, so execution refuses the task here, where a repair can
    still give it a purpose."""
    with pytest.raises(StageFailure) as err:
        _run("sql", _update_then("count_rows"))
    assert (err.value.stage, err.value.reason) == ("execute", "purposeless")
    assert err.value.detail == ("s4 count_rows: the answer is the same without step s3 "
                                "(update_rows), whose result only reads use")


def test_an_answer_that_shows_the_last_write_is_kept():
    trace, graph = _run("sql", _update_then("sum_column", column=_lit("total")))
    assert [s.tool for s in graph.steps] == ["top_spender", "customer_orders", "update_rows",
                                         "sum_column"]
    assert trace.repairs == [] and trace.answer is not None


def _unassign_then_read(field: str) -> list[Step]:
    """An assigned ticket left without an assignee, then its ``field`` as the answer."""
    return [
        Step(id="s1", tool="unassign_ticket", bind={
            "ticket": Binding(kind="sample", facet="assigned_ticket")}),
        Step(id="s2", tool="ticket_field", bind={
            "ticket": Binding(kind="step", step="s1"), "field": _lit(field)}),
    ]


def test_an_answer_beside_the_change_it_reads_is_purposeless():
    """"Unassign ticket 18, and write its title to answer.txt": the title is the same
    without the change, a question beside the task; its assignee reports on it."""
    with pytest.raises(StageFailure) as err:
        _run("service", _unassign_then_read("title"))
    assert (err.value.stage, err.value.reason) == ("execute", "purposeless")
    assert err.value.detail == ("s2 ticket_field: the answer is the same without step s1 "
                                "(unassign_ticket), whose entry it reads")
    trace, graph = _run("service", _unassign_then_read("assignee_email"))
    assert [s.tool for s in graph.steps] == ["unassign_ticket", "ticket_field"]
    assert trace.repairs == [] and trace.answer is not None


def test_a_repair_gives_the_last_write_a_purpose():
    trace, graph = _run("sql", _update_then("count_rows"), max_repairs=2)
    assert [r.reason for r in trace.repairs][:1] == ["purposeless"]
    assert [s.tool for s in graph.steps][-1] != "count_rows"


def _crlf_fix_then(read: str) -> list[Step]:
    """The text file saved with Windows line endings found and converted, then ``read``
    of that file (the fix task's report)."""
    found = Binding(kind="step", step="s1")
    return [Step(id="s1", tool="find_crlf_file", bind={}),
            Step(id="s2", tool="unix_line_endings", bind={"path": found}),
            Step(id="s3", tool=read, bind={"path": Binding(kind="step", step="s2")})]


def _run_fix(steps: list[Step], fault: str, max_repairs: int = 0):
    eco = ecosystem("files")
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=steps, fault=fault)
    candidate = Candidate(candidate_id="purpose-fix", index=0, ecosystem="files", seed=7,
                          graph=graph)
    with LiveEnvironment(eco, candidate.seed, sandbox_opener(eco, DockerConfig(), RUN,
                                                             candidate), fault=fault) as env:
        return execute_graph(env, eco, candidate, max_repairs=max_repairs)


def test_a_fix_report_the_fault_leaves_unchanged_is_purposeless():
    """Converting line endings keeps the number of lines: that count reports on nothing the
    fix did, so a reader asks why it is there."""
    with pytest.raises(StageFailure) as err:
        _run_fix(_crlf_fix_then("count_lines"), "windows_line_endings")
    assert (err.value.stage, err.value.reason) == ("execute", "purposeless")
    assert err.value.detail == ("s3 count_lines: the answer is the same without the repair "
                                "(step s2 unix_line_endings)")


def test_a_fix_report_that_shows_the_repair_is_kept():
    trace, graph = _run_fix(_crlf_fix_then("checksum"), "windows_line_endings")
    assert [s.tool for s in graph.steps] == ["find_crlf_file", "unix_line_endings", "checksum"]
    assert trace.repairs == [] and trace.answer is not None
