"""The work-per-task section: looked-up values counted from the spec's reads."""

from environments.ecosystems import load_ecosystem
from tasks.dataset.report.work import looked_up


def _step(sid, tool, **binds):
    return {"id": sid, "tool": tool,
            "bind": {p: {"kind": "step", "step": s} for p, s in binds.items()}}


def test_a_value_a_read_prints_and_a_later_step_takes_is_looked_up():
    sql = load_ecosystem("sql")
    graph = {"steps": [_step("s1", "top_spender"), _step("s2", "customer_orders", customer="s1"),
                       _step("s3", "count_rows", table="s2")]}
    assert looked_up(sql, graph) == 1  # s2 is a write: its table is made, not looked up
    stack = load_ecosystem("files+git+sql")
    graph = {"steps": [_step("s1", "stalest_branch"), _step("s2", "history_csv", ref="s1"),
                       _step("s3", "import_csv", csv="s2")]}
    assert looked_up(stack, graph) == 1
    assert looked_up(stack, {"steps": [_step("s1", "stalest_branch")]}) == 0
