"""Instructions: literals as code spans, preservation, styles and wording variety."""

from collections import Counter
from dataclasses import replace

import pytest

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace, Trace
from schemas.verifier import Check
from tasks.failures import StageFailure
from tasks.instruct import PHRASES, render_instruction, render_phrase, structure
from tasks.preserve import (
    ANSWER_ESSENTIALS,
    Required,
    check_items_preserved,
    check_preserved,
    code_spans,
    missing_literals,
    required_literals,
)

ECOSYSTEMS = ["files", "sql", "git", "service", "tests/fixtures/ecosystems/inventory",
              "tests/fixtures/ecosystems/faults"]
FILES = load_ecosystem("files")


def _step(step_id, tool, args, stdout=""):
    return StepTrace(step_id=step_id, tool=tool, args=args, command=f"run {tool}",
                     observation=Observation(exit_code=0, stdout=stdout, stderr="",
                                             duration_s=0.01),
                     output=None, output_type="file.text")


def chain_task():
    """A three-step chain as the executor records it: column -> head -> count lines."""
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=[
        Step(id="s1", tool="csv_column", bind={
            "path": Binding(kind="state", value="data/customers.csv"),
            "column": Binding(kind="sample", facet="csv_column", of="path"),
            "out": Binding(kind="literal", value="out/column_values.txt")}),
        Step(id="s2", tool="head_lines", bind={
            "path": Binding(kind="step", step="s1"),
            "n": Binding(kind="sample", facet="line_count", of="path"),
            "out": Binding(kind="literal", value="out/first_lines.txt")}),
        Step(id="s3", tool="count_lines", bind={"path": Binding(kind="step", step="s2")}),
    ])
    trace = Trace(steps=[
        _step("s1", "csv_column", {"path": "data/customers.csv", "column": "balance",
                                   "out": "out/column_values.txt"}),
        _step("s2", "head_lines", {"path": "out/column_values.txt", "n": "26",
                                   "out": "out/first_lines.txt"}),
        _step("s3", "count_lines", {"path": "out/first_lines.txt"}, stdout="26\n"),
    ], answer="26")
    checks = [Check(kind="state", section="files", key="out/column_values.txt", expected="x"),
              Check(kind="state", section="files", key="out/first_lines.txt", expected="x"),
              Check(kind="answer", key="answer.txt", expected="26")]
    return graph, trace, checks


@pytest.mark.parametrize("name", ECOSYSTEMS)
def test_every_intent_and_label_renders_each_value_as_its_own_code_span(name):
    eco = load_ecosystem(name)
    for tool in eco.spec.tools:
        args = {p.name: f"v{i}-{p.name}" for i, p in enumerate(tool.params)}
        for source in (tool.intent, tool.returns.label or ""):
            rendered = render_phrase(source, args)
            spans = code_spans(rendered)
            for value in args.values():
                if value in rendered:
                    assert value in spans, (tool.name, rendered)


def test_every_answer_format_keeps_its_essential_wording():
    for parser, variants in PHRASES["answer_formats"].items():
        essential = ANSWER_ESSENTIALS.get(parser, "one line")
        assert all(essential.lower() in v.lower() for v in variants), parser


def test_code_spans_follow_commonmark_pairing():
    text = "Use `a b`, ``x`y`` and `` `z` ``; not ` unpaired"
    assert code_spans(text) == ["a b", "x`y", "`z`"]


def test_required_literals_come_from_the_trace_and_the_checks():
    graph, trace, checks = chain_task()
    required = required_literals(FILES.spec, graph, trace, checks)
    # step-bound inputs (out/column_values.txt as input of s2) are not listed twice
    assert required.spans == ("data/customers.csv", "balance", "out/column_values.txt", "26",
                              "out/first_lines.txt", "answer.txt")
    assert required.phrases == ("integer",)


@pytest.mark.parametrize("style", ["goal", "step"])
def test_template_instructions_preserve_everything(style):
    graph, trace, checks = chain_task()
    required = required_literals(FILES.spec, graph, trace, checks)
    instruction = render_instruction(FILES, graph, trace, seed=7, style=style)
    check_preserved(instruction.text, required)
    assert instruction.template_id.startswith(f"{style}/")
    assert instruction.text == render_instruction(FILES, graph, trace, 7, style).text
    assert [i.target for i in instruction.items] == ["`out/column_values.txt`",
                                                     "`out/first_lines.txt`", "`answer.txt`"]
    if style == "step":  # ordered, numbered steps, each led by the verb of what it does
        steps = [ln for ln in instruction.text.splitlines() if ln[:1].isdigit() or
                 ln.startswith("Step ")]
        verbs = PHRASES["step"]["verbs"]
        assert len(steps) == 3
        for line, kind in zip(steps, ["create", "create", "answer"], strict=True):
            assert any(f" {v} `" in line for v in verbs[kind]), line


def test_a_missing_literal_or_format_word_is_named():
    graph, trace, checks = chain_task()
    required = required_literals(FILES.spec, graph, trace, checks)
    text = render_instruction(FILES, graph, trace, seed=3).text
    broken = text.replace("`balance`", "balance")
    with pytest.raises(StageFailure) as err:
        check_preserved(broken, required)
    assert (err.value.stage, err.value.reason) == ("instruct", "not_preserved")
    assert "`balance`" in err.value.detail
    assert missing_literals("`a`", Required(("a",), ("per line",))) == ["the words 'per line'"]
    # a literal inside a longer code span is not the literal
    assert missing_literals("`git log main`", Required(("main",))) == ["`main`"]


def test_each_line_must_carry_its_own_step_literals():
    graph, trace, checks = chain_task()
    required = required_literals(FILES.spec, graph, trace, checks)
    assert required.by_step == (("data/customers.csv", "balance", "out/column_values.txt"),
                                ("26", "out/first_lines.txt"), ())
    items = list(render_instruction(FILES, graph, trace, seed=1).items)
    check_items_preserved(items, required)
    # `26` still appears elsewhere in the text, but not in the line of its own step
    items[1] = replace(items[1], text="the first lines of `out/column_values.txt`")
    with pytest.raises(StageFailure, match="the line for `out/first_lines.txt` lacks `26`"):
        check_items_preserved(items, required)
    check_items_preserved(items, required, context="Keep `26` lines.")


def test_structure_reflects_the_executed_steps():
    graph, trace, _ = chain_task()
    assert structure(graph, trace) == "chain"
    assert structure(graph, Trace(steps=trace.steps[:1])) == "single"


def test_wording_varies_and_no_phrasing_dominates():
    graph, trace, _ = chain_task()
    rendered = [render_instruction(FILES, graph, trace, seed=s) for s in range(600)]
    assert len({r.text for r in rendered}) >= 300
    for part in (2, 3):  # opener and closer ids
        counts = Counter(r.template_id.split("/")[part] for r in rendered)
        assert max(counts.values()) / len(rendered) <= 0.2, counts.most_common(3)
    openings = Counter(" ".join(r.text.split()[:5]) for r in rendered)
    assert max(openings.values()) / len(rendered) <= 0.2


@pytest.mark.parametrize("style", ["goal", "step"])
def test_a_looked_up_value_is_explained_where_a_later_step_uses_it(style):
    """A lookup inside the graph gets no line of its own; the line of the step that takes
    its value says what the value is, with the lookup's own literals, so they are kept."""
    sql = load_ecosystem("sql")
    graph = WorkflowGraph(ecosystem="sql", shape="chain", steps=[
        Step(id="s1", tool="top_spender", bind={
            "db": Binding(kind="state", value="shop.db"),
            "status": Binding(kind="sample", facet="order_status")}),
        Step(id="s2", tool="customer_orders", bind={
            "db": Binding(kind="state", value="shop.db"),
            "customer": Binding(kind="step", step="s1"),
            "out": Binding(kind="literal", value="customer_orders")}),
    ])
    lookup = _step("s1", "top_spender", {"db": "shop.db", "status": "shipped"}, stdout="17\n")
    trace = Trace(steps=[
        lookup.model_copy(update={"output": 17, "output_type": "sql.customer_id"}),
        _step("s2", "customer_orders", {"db": "shop.db", "customer": "17",
                                        "out": "customer_orders"}),
    ])
    checks = [Check(kind="state", section="tables", key="customer_orders", expected="x")]
    required = required_literals(sql.spec, graph, trace, checks)
    assert "shipped" in required.spans and "17" not in required.spans
    instruction = render_instruction(sql, graph, trace, seed=3, style=style)
    check_preserved(instruction.text, required)
    check_items_preserved(instruction.items, required, sql.spec.context)
    [item] = instruction.items
    assert item.step == 1
    assert "(`17` is the customer_id of the customer whose orders with status `shipped`" \
        in item.text
