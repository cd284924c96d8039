"""Instructions: literals as code spans, preservation, styles, composition, leaked answers
and wording variety."""

import random
from collections import Counter
from dataclasses import replace

import pytest

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace, Trace
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.instruct.instruction import (
    PHRASES,
    STYLES,
    Item,
    answer_format,
    context_text,
    render_instruction,
    render_phrase,
    structure,
)
from tasks.instruct.preserve import (
    ANSWER_ESSENTIALS,
    Required,
    check_items_preserved,
    check_preserved,
    code_spans,
    missing_literals,
    required_literals,
)
from tasks.rules.deliverables import flow, goal_checks
from tasks.rules.leaks import check_not_leaked, leaked_in

ECOSYSTEMS = ["files", "sql", "git", "service", "tests/fixtures/ecosystems/inventory",
              "tests/fixtures/ecosystems/faults"]
FILES = load_ecosystem("files")


def _step(step_id, tool, args, stdout=""):
    return StepTrace(step_id=step_id, tool=tool, args=args, command=f"run {tool}",
                     observation=Observation(exit_code=0, stdout=stdout, stderr="",
                                             duration_s=0.01),
                     output=None, output_type="file.text")


def files_task(shape, steps, answer):
    """A files graph and its trace as the executor records it: ``steps`` are (id, tool,
    bindings, arguments); the last step prints ``answer``; one check per write's output."""
    graph = WorkflowGraph(ecosystem="files", shape=shape,
                          steps=[Step(id=i, tool=t, bind=b) for i, t, b, _ in steps])
    trace = Trace(steps=[_step(i, t, a, stdout=f"{answer}\n" if n == len(steps) - 1 else "")
                         for n, (i, t, _, a) in enumerate(steps)], answer=answer)
    checks = [Check(kind="state", section="files", key=a["out"], expected=a["out"])
              for _, _, _, a in steps if "out" in a]
    return graph, trace, [*checks, Check(kind="answer", key="answer.txt", expected=answer)]


def _state(value):
    return Binding(kind="state", value=value)


def _literal(value):
    return Binding(kind="literal", value=value)


def _from(step):
    return Binding(kind="step", step=step)


def chain_task():
    """A three-step chain: column -> head -> count lines."""
    return files_task("chain", [
        ("s1", "csv_column", {"path": _state("data/customers.csv"),
                              "column": Binding(kind="sample", facet="csv_column", of="path"),
                              "out": _literal("out/column_values.txt")},
         {"path": "data/customers.csv", "column": "balance", "out": "out/column_values.txt"}),
        ("s2", "head_lines", {"path": _from("s1"),
                              "n": Binding(kind="sample", facet="line_count", of="path"),
                              "out": _literal("out/first_lines.txt")},
         {"path": "out/column_values.txt", "n": "26", "out": "out/first_lines.txt"}),
        ("s3", "count_lines", {"path": _from("s2")}, {"path": "out/first_lines.txt"}),
    ], "26")


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


def test_an_answer_format_the_intent_already_states_is_not_repeated():
    rng = random.Random(3)
    said = "the ids of the tickets of team {{ team }}, one per line in increasing order"
    assert answer_format("lines", rng, said) == ""
    assert "per line" in answer_format("lines", rng, "the ids of the open tickets")
    assert "integer" in answer_format("int", rng, said)


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


@pytest.mark.parametrize("style", ["spec", "step"])
def test_template_instructions_preserve_everything(style):
    graph, trace, checks = chain_task()
    required = required_literals(FILES.spec, graph, trace, checks, style)
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
    text = render_instruction(FILES, graph, trace, seed=3, style="spec").text
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
    items = list(render_instruction(FILES, graph, trace, seed=1, style="spec").items)
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
    rendered = [render_instruction(FILES, graph, trace, seed=s, style="spec")
                for s in range(600)]
    assert len({r.text for r in rendered}) >= 300
    for part in (2, 3):  # opener and closer ids
        counts = Counter(r.template_id.split("/")[part] for r in rendered)
        assert max(counts.values()) / len(rendered) <= 0.2, counts.most_common(3)
    openings = Counter(" ".join(r.text.split()[:5]) for r in rendered)
    assert max(openings.values()) / len(rendered) <= 0.2


SPEC_TEXT_SEED_7 = (
    "Prepare the following outputs:\n\n"
    "- `out/column_values.txt`: the values of the `balance` column of `data/customers.csv`, "
    "one per line in row order, without the header.\n"
    "- `out/first_lines.txt`: the first `26` lines of `out/column_values.txt`, in their "
    "order.\n"
    "- `answer.txt`: the number of lines in `out/first_lines.txt`, as a plain integer.\n\n"
    "Background: Your working directory holds a small project. Application logs are under "
    "logs/, CSV data exports under data/, JSON configuration under config/ and notes under "
    "docs/.\n\n"
    "Paths are relative to the working directory; do not touch anything not listed.\n")


def test_spec_style_is_the_former_goal_text_byte_for_byte():
    """Pinned from the goal style as it rendered before goal-level instructions existed
    (with the promise of order a tool's intent has stated since: "in their order")."""
    graph, trace, _ = chain_task()
    spec = render_instruction(FILES, graph, trace, seed=7, style="spec")
    assert spec.text == SPEC_TEXT_SEED_7
    assert spec.template_id == "spec/bullets/g05/x3"
    assert render_instruction(FILES, graph, trace, seed=8, style="spec").text.startswith(
        "Set things up so that all of the following hold:\n\n1. `out/column_values.txt`: ")


def test_the_default_style_is_goal():
    graph, trace, _ = chain_task()
    assert STYLES[0] == "goal"
    assert render_instruction(FILES, graph, trace, seed=7).style == "goal"


def branch_task():
    """grep -> (sort -u: a deliverable) and (count lines: the answer); the grep output is
    an intermediate result both consume."""
    return files_task("fan_out", [
        ("s1", "grep_lines", {"path": _state("logs/app.log"),
                              "pattern": Binding(kind="sample", facet="token", of="path"),
                              "out": _literal("out/matching_lines.txt")},
         {"path": "logs/app.log", "pattern": "ERROR", "out": "out/matching_lines.txt"}),
        ("s2", "sort_unique", {"path": _from("s1"), "out": _literal("out/sorted_unique.txt")},
         {"path": "out/matching_lines.txt", "out": "out/sorted_unique.txt"}),
        ("s3", "count_lines", {"path": _from("s1")}, {"path": "out/matching_lines.txt"}),
    ], "7")


GREP = "the lines that contain the text `ERROR` in `logs/app.log`, in their original order"


def test_goal_style_states_deliverables_only_composing_what_they_consume():
    graph, trace, checks = branch_task()
    for seed in range(20):
        goal = render_instruction(FILES, graph, trace, seed=seed, style="goal")
        assert [i.target for i in goal.items] == ["`out/sorted_unique.txt`", "`answer.txt`"]
        assert "out/matching_lines.txt" not in goal.text  # the intermediate is not named
        # the intermediate result has a sentence of its own; the items refer back to it
        assert [s.text for s in goal.sentences] == [
            f"In a file of your choice, write {GREP}."]
        assert goal.text.index(goal.sentences[0].text) < goal.text.index("`answer.txt`")
        assert goal.items[0].text.startswith("the distinct lines of that file, sorted in byte")
        assert goal.items[1].text.startswith("the number of lines in that file, ")
        assert [i.described for i in goal.lines] == [(0,), (1,), (2,)]
        assert goal.template_id.startswith("goal/")
    spec = render_instruction(FILES, graph, trace, seed=0, style="spec")
    assert [i.target for i in spec.items] == ["`out/matching_lines.txt`",
                                              "`out/sorted_unique.txt`", "`answer.txt`"]


def test_goal_checks_and_required_literals_leave_intermediates_out():
    graph, trace, checks = branch_task()
    steps = flow(FILES.spec, graph, trace)
    assert (steps.listed, steps.intermediate) == ({1}, {0})
    assert steps.intermediate_keys == {"out/matching_lines.txt"}
    kept = goal_checks(FILES.spec, graph, trace, checks)
    assert [c.key for c in kept] == ["out/sorted_unique.txt", "answer.txt"]
    required = required_literals(FILES.spec, graph, trace, kept, "goal")
    assert required.spans == ("logs/app.log", "ERROR", "out/sorted_unique.txt", "answer.txt")
    goal = render_instruction(FILES, graph, trace, seed=4, style="goal")
    check_preserved(goal.text, required)
    check_items_preserved(goal.lines, required, context_text(FILES, "goal"))
    # the sentence introducing a result must carry the literals of its step
    broken = [replace(goal.sentences[0], text="In a file of your choice, write the grep.")]
    with pytest.raises(StageFailure, match="lacks `logs/app.log`"):
        check_items_preserved(broken, required)
    # spec style still requires and checks every intermediate
    assert "out/matching_lines.txt" in required_literals(FILES.spec, graph, trace, checks,
                                                         "spec").spans


def test_nothing_but_intermediates_leaves_no_outcome():
    graph, trace, _ = branch_task()
    only = [Check(kind="state", section="files", key="out/matching_lines.txt", expected="x")]
    with pytest.raises(StageFailure) as err:
        goal_checks(FILES.spec, graph, trace, only)
    assert (err.value.stage, err.value.reason) == ("verify", "no_outcome")


def test_an_observed_value_is_named_by_the_step_that_observed_it():
    """A read's value bound to a later input is found by a sentence of its own (the read's
    phrase), not given; an entry a lookup singles out is named by a reference to it."""
    service = load_ecosystem("service")
    count = next(t for t in service.spec.tools if t.effect == "read"
                 and any(p.name == "ticket" for p in t.params))
    close = service.spec.tool("close_ticket")
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool=count.name, bind={p.name: Binding(kind="literal", value="v")
                                             for p in count.params}),
        Step(id="s2", tool="close_ticket", bind={
            p.name: Binding(kind="step", step="s1") if p.name == "ticket"
            else Binding(kind="literal", value="note") for p in close.params}),
    ])
    args1 = {p.name: "12" if p.name == "ticket" else "x" for p in count.params}
    args2 = {p.name: "31" if p.name == "ticket" else "note" for p in close.params}
    trace = Trace(steps=[_step("s1", count.name, args1, stdout="31\n"),
                         _step("s2", "close_ticket", args2)])
    goal = render_instruction(service, graph, trace, seed=1, style="goal")
    (item,) = goal.items
    (found,) = goal.sentences  # the lookup's own sentence, then a reference to it
    assert found.text == f"Find {render_phrase(count.intent, args1)}."
    assert item.target == "that number"
    assert "`31`" not in goal.text
    spec = render_instruction(service, graph, trace, seed=1, style="spec")
    assert spec.items[0].target == "ticket `31`"


@pytest.mark.parametrize("answer,text,leaked", [
    ("growth", "- ticket `12`: moved to team `growth`.", "the code span `growth`"),
    ("Open", "- ticket `3`: reopened (status `open`).", "the code span `open`"),
    ("26", "- `answer.txt`: the first `26.0` lines, as a plain integer.", "the code span `26.0`"),
    ("1", "1. `out/a_1.txt`: the first `10` lines of `v1.2`.", None),
    ("0", "- `answer.txt`: the number of lines, as a plain integer.", None),
    ("yes", "- `answer.txt`: answer yes or no, on one line.", "the line for `answer.txt`"),
    ("yes", "Say yes when done.\n\n- `answer.txt`: the flag, on one line.", None),
    ("", "- `answer.txt`: `` ``.", None),
])
def test_an_answer_leaks_as_a_whole_token_of_a_span_or_an_item_line(answer, text, leaked):
    items = []
    for line in text.splitlines():
        if line.startswith(("-", "1.")):
            target, _, rest = line.split(" ", 1)[1].partition(": ")
            items.append(Item(target=target, text=rest, step=0))
    assert leaked_in(answer, text, items) == leaked


def test_a_leaked_answer_is_rejected_with_its_own_reason():
    graph, trace, _ = chain_task()  # the number of lines of the first `26` lines: 26
    for style in STYLES:
        instruction = render_instruction(FILES, graph, trace, seed=2, style=style)
        with pytest.raises(StageFailure) as err:
            check_not_leaked(trace.answer, instruction.text, instruction.items)
        assert (err.value.stage, err.value.reason) == ("instruct", "leaked_answer")
        assert "'26'" in err.value.detail
    graph, trace, _ = branch_task()
    instruction = render_instruction(FILES, graph, trace, seed=2)
    check_not_leaked(trace.answer, instruction.text, instruction.items)  # 7 is not shown


def test_a_record_the_environment_creates_is_delivered_even_when_read_back():
    """A subtask created and then read: a ticket is a record of the tracker, not a work
    file, so it is listed, named and checked although a later step consumes it."""
    service = load_ecosystem("service")
    read = next(t for t in service.spec.tools if t.effect == "read"
                and [p.name for p in t.params] == ["ticket"])
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="create_subtask", bind={
            "ticket": _state("3"), "subtask": Binding(kind="sample", facet="next_ticket_id"),
            "title": Binding(kind="sample", facet="new_title"),
            "team": Binding(kind="sample", facet="ticket_team")}),
        Step(id="s2", tool=read.name, bind={"ticket": _from("s1")}),
    ])
    trace = Trace(steps=[
        _step("s1", "create_subtask", {"ticket": "3", "subtask": "28", "title": "Fix login",
                                       "team": "growth"}),
        _step("s2", read.name, {"ticket": "28"}, stdout="x\n")], answer="x")
    checks = [Check(kind="state", section="tickets", key="28", expected={}),
              Check(kind="answer", key="answer.txt", expected="x")]
    kept = goal_checks(service.spec, graph, trace, checks)
    assert [c.key for c in kept] == ["28", "answer.txt"]
    required = required_literals(service.spec, graph, trace, kept, "goal")
    assert {"28", "Fix login"} <= set(required.spans)
    goal = render_instruction(service, graph, trace, seed=0, checks=kept)
    check_preserved(goal.text, required)
    check_items_preserved(goal.items, required, context_text(service, "goal"))
    assert [i.target for i in goal.items] == ["ticket `28`", "`answer.txt`"]


def test_a_seeded_entry_changed_in_place_is_delivered_even_when_read_back():
    """Closing a seeded ticket and then reading its title: the close is part of the goal
    (the end state differs from the seed), not an intermediate the answer consumed."""
    service = load_ecosystem("service")
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="set_status", bind={
            "ticket": _state("9"), "status": Binding(kind="sample", facet="next_status")}),
        Step(id="s2", tool="ticket_field", bind={
            "ticket": _from("s1"), "field": Binding(kind="sample", facet="ticket_field")}),
    ])
    trace = Trace(steps=[
        _step("s1", "set_status", {"ticket": "9", "status": "closed"}),
        _step("s2", "ticket_field", {"ticket": "9", "field": "title"}, stdout="Old bug\n")],
        answer="Old bug")
    checks = [Check(kind="state", section="tickets", key="9", expected={"status": "closed"}),
              Check(kind="answer", key="answer.txt", expected="Old bug")]
    assert [c.key for c in goal_checks(service.spec, graph, trace, checks)] == \
        ["9", "answer.txt"]
    goal = render_instruction(service, graph, trace, seed=0, checks=checks)
    assert [i.target for i in goal.items] == ["ticket `9`", "`answer.txt`"]
    assert "`closed`" in goal.items[0].text


def test_a_parent_ticket_created_for_a_subtask_is_delivered_too():
    """A parent ticket created for a subtask: it is listed, named and checked, and the
    subtask's line names the parent by its id."""
    service = load_ecosystem("service")
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="create_ticket", bind={
            p.name: Binding(kind="sample", facet="x")
            for p in service.spec.tool("create_ticket").params}),
        Step(id="s2", tool="create_subtask", bind={
            "ticket": _from("s1"), "subtask": Binding(kind="sample", facet="next_ticket_id"),
            "title": Binding(kind="sample", facet="new_title"),
            "team": Binding(kind="sample", facet="ticket_team")}),
    ])
    created = {p.name: "x" for p in service.spec.tool("create_ticket").params}
    trace = Trace(steps=[
        _step("s1", "create_ticket", {**created, "ticket": "28", "title": "Parent"}),
        _step("s2", "create_subtask", {"ticket": "28", "subtask": "29", "title": "Child",
                                       "team": "growth"})])
    checks = [Check(kind="state", section="tickets", key="28", expected={"id": 28}),
              Check(kind="state", section="tickets", key="29",
                    expected={"id": 29, "parent": 28})]
    assert [c.key for c in goal_checks(service.spec, graph, trace, checks)] == ["28", "29"]
    goal = render_instruction(service, graph, trace, seed=0, checks=checks)
    assert [i.target for i in goal.items] == ["ticket `28`", "ticket `29`"]
    assert "of ticket `28`" in goal.items[1].text


@pytest.mark.parametrize("style", ["goal", "spec", "step"])
def test_a_looked_up_value_is_explained_where_a_later_step_uses_it(style):
    """A lookup inside the graph gets no item of its own.  In the goal style a sentence
    finds it and the item that takes its value refers back to it; in spec and step the
    item says what the value is.  Either way with the lookup's own literals."""
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
    instruction = render_instruction(sql, graph, trace, seed=3, style=style, checks=checks)
    check_preserved(instruction.text, required)
    check_items_preserved(instruction.lines, required, context_text(sql, style))
    [item] = instruction.items
    assert item.step == 1
    if style == "goal":  # a sentence of its own finds the customer; the item refers to it
        assert "`17`" not in instruction.text
        [found] = instruction.sentences
        assert found.text.startswith("Find the customer_id of the customer whose orders with "
                                     "status `shipped` add up")
        # not "every order of the customer whose customer_id is that customer"
        assert item.text.endswith("every order of that customer"), item.text
    else:
        assert ("(`17` is the customer_id of the customer whose orders with status `shipped`"
                in item.text)


def test_a_noun_an_article_opens_stays_before_a_composed_value():
    """"the commit {{ ref }} points to" keeps its noun when ``ref`` is a lookup's phrase
    that merely mentions a commit ("the branch whose tip commit ..."): no "the the"."""
    git = load_ecosystem("git")
    graph = WorkflowGraph(ecosystem="git", shape="chain", steps=[
        Step(id="s1", tool="stalest_branch", bind={}),
        Step(id="s2", tool="tag_annotated", bind={
            "ref": Binding(kind="step", step="s1"),
            "name": Binding(kind="literal", value="release-candidate"),
            "message": Binding(kind="literal", value="Candidate build")})])
    trace = Trace(steps=[
        _step("s1", "stalest_branch", {}, stdout="feature/x\n").model_copy(
            update={"output": "feature/x", "output_type": "git.ref.head"}),
        _step("s2", "tag_annotated", {"ref": "feature/x", "name": "release-candidate",
                                      "message": "Candidate build"})])
    checks = [Check(kind="state", section="refs", key="refs/tags/release-candidate",
                    expected="x")]
    text = render_instruction(git, graph, trace, seed=1, style="goal", checks=checks).text
    assert "the the " not in text and "`feature/x`" not in text
    assert text.startswith("Find the branch whose tip commit has the oldest committer date.")
    assert "on that branch" in text


def test_the_context_names_the_database_file_except_in_the_goal_style():
    """sql's context is a template: a goal-level task leaves `shop.db` to be found (a
    describer names it), the fully specified styles name it."""
    sql = load_ecosystem("sql")
    goal, spec, step = (context_text(sql, s) for s in ("goal", "spec", "step"))
    assert "shop.db" not in goal and "{%" not in goal
    assert "The shop's database, `shop.db`, is a SQLite file" in spec and spec == step
    assert goal.startswith("The shop's database is a SQLite file in the current directory. "
                           "Its tables are `customers`")


def test_one_item_never_answers_another():
    """A restored tag's message the instruction spells out by rule answers a question for
    the subject of the commit it tags; a value the solver must look up answers nothing."""
    from schemas.verifier import Check
    from tasks.rules.leaks import answered_by

    tag = [Check(kind="state", section="tags", key="v0.2.0",
                 expected={"commit": "abc", "annotation": "Release 0.2.0"})]
    text = "`v0.2.0`: back as it was, with the message it had (Release and its version)."
    assert answered_by("Release 0.2.0", tag, text) == "the value asked of tags/v0.2.0"
    assert answered_by("Release 0.3.0", tag, text) is None
    ticket = [Check(kind="state", section="tickets", key="8", expected={"team": "growth"})]
    assert answered_by("growth", ticket, "ticket `8`: on the team of its assignee") is None
    assert answered_by("7", [Check(kind="state", section="t", key="k", expected="7")],
                       "7") is None  # too short to be read off anything


def test_a_fix_task_opens_with_its_symptom_alone():
    """A fix task planned in a scenario opens with the fault's symptom, not also with the
    scenario's motivation: before, two openings stood one after the other ("The data
    exports go to an outside analyst..." then "Problem: loading one of the CSV exports...")."""
    graph = WorkflowGraph(ecosystem="files", shape="chain", fault="duplicated_rows",
                          scenario="export_handover", steps=[
                              Step(id="s1", tool="find_repeated_rows", bind={}),
                              Step(id="s2", tool="dedupe_rows", bind={"path": _from("s1")})])
    trace = Trace(steps=[_step("s1", "find_repeated_rows", {}, "data/orders.csv\n"),
                         _step("s2", "dedupe_rows", {"path": "data/orders.csv"})])
    checks = [Check(kind="state", section="files", key="data/orders.csv",
                    expected="data/orders.csv")]
    motivations = FILES.spec.scenario("export_handover").motivations
    symptom = FILES.spec.fault("duplicated_rows").symptom.strip()
    for seed in range(12):
        text = render_instruction(FILES, graph, trace, seed, checks=checks).text
        assert symptom[1:] in text.split("\n\n")[0], text  # its first letter may be upper-cased
        assert not any(m.text.strip() in text for m in motivations), text


def test_a_created_record_is_not_said_to_lack_what_a_later_item_gives_it():
    """Ticket 45 created and then assigned: its creation no longer says "no assignee"
    (read as a contradiction two lines later) but still says what no item changes."""
    service = load_ecosystem("service")
    sample = {"kind": "sample", "facet": "x"}
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="busiest_assignee", bind={}),
        Step(id="s2", tool="create_ticket", bind={p: Binding(**sample) for p in
                                                  ("ticket", "title", "team", "priority")}),
        Step(id="s3", tool="assign_ticket", bind={"ticket": _from("s2"), "user": _from("s1")})])
    trace = Trace(steps=[
        _step("s1", "busiest_assignee", {}, "ann@example.com\n"),
        _step("s2", "create_ticket", {"ticket": "45", "title": "Login loop", "team": "web",
                                      "priority": "low"}, "45\n"),
        _step("s3", "assign_ticket", {"ticket": "45", "user": "ann@example.com"}, "45\n")])
    checks = [Check(kind="state", section="tickets", key="45", expected="45")]
    for style in ("goal", "spec", "step"):
        text = render_instruction(service, graph, trace, 3, style=style, checks=checks).text
        assert "Login loop" in text and "no labels" in text, text
        assert "no assignee" not in text, text


def test_a_found_user_beside_a_new_one_is_named_by_a_letter():
    """"a new comment by that user" after a new user was listed could mean either user:
    the user found by description is named by a letter when the list creates a user."""
    service = load_ecosystem("service")
    sample = {"kind": "sample", "facet": "x"}
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="create_user", bind={p: Binding(**sample)
                                                for p in ("name", "user", "team")}),
        Step(id="s2", tool="create_ticket", bind={p: Binding(**sample) for p in
                                                  ("ticket", "title", "team", "priority")}),
        Step(id="s3", tool="comment_ticket", bind={"ticket": _from("s2"),
                                                   "author": Binding(**sample),
                                                   "body": Binding(**sample)})])
    trace = Trace(steps=[
        _step("s1", "create_user", {"name": "Tamara Lee", "user": "tamara@example.com",
                                    "team": "web"}, "tamara@example.com\n"),
        _step("s2", "create_ticket", {"ticket": "45", "title": "Login loop", "team": "web",
                                      "priority": "low"}, "45\n"),
        _step("s3", "comment_ticket", {"ticket": "45", "author": "diana@example.com",
                                       "body": "Fix is in review."}, "45\n")])
    checks = [Check(kind="state", section="users", key="tamara@example.com",
                    expected="tamara@example.com"),
              Check(kind="state", section="tickets", key="45", expected="45")]
    described = {"diana@example.com": "the user named `Diana Lloyd`"}
    text = render_instruction(service, graph, trace, 3, checks=checks, described=described).text
    assert "user A" in text and "that user" not in text, text



def test_an_item_does_not_say_its_target_twice():
    from tasks.instruct.instruction import _without_target

    assert _without_target("table `products`", "`products` with no negative `price` left") \
        == "with no negative `price` left"
    assert _without_target("the deleted branch", "the deleted branch back at its old tip") \
        == "back at its old tip"
    # a text that goes on with the literal as its subject keeps it
    assert _without_target("table `t`", "`t` `x` swapped") == "`t` `x` swapped"
    assert _without_target("`answer.txt`", "the number of rows") == "the number of rows"


def test_a_list_of_one_item_is_never_numbered():
    import random

    from tasks.instruct.instruction import PHRASES, _layout

    layouts = PHRASES["goal"]["layouts"]
    ones = {_layout(random.Random(n), layouts, 1)[0] for n in range(60)}
    twos = {_layout(random.Random(n), layouts, 2)[0] for n in range(60)}
    assert "numbered" not in ones and len(ones) >= 2
    assert "numbered" in twos


def test_a_rewind_says_commit_or_commits_as_the_count_needs():
    from environments.ecosystems import load_ecosystem
    from tasks.rules.compose import _template

    intent = load_ecosystem("git").spec.tool("rewind_branch").intent
    assert "moved back `1` commit along" in _template(intent).render(steps="1")
    assert "moved back `3` commits along" in _template(intent).render(steps="3")


def test_a_scratch_file_of_a_chain_is_a_new_file_not_another_one():
    """Two intermediate files get letters; each is "a new file": "In another file (file B)"
    read as if some existing file were meant."""
    graph, trace, _ = files_task("chain", [
        ("s1", "grep_lines", {"path": _state("logs/app.log"), "pattern": _literal("ERROR"),
                              "out": _literal("out/matching_lines.txt")},
         {"path": "logs/app.log", "pattern": "ERROR", "out": "out/matching_lines.txt"}),
        ("s2", "head_lines", {"path": _from("s1"), "n": _literal("3"),
                              "out": _literal("out/first_lines.txt")},
         {"path": "out/matching_lines.txt", "n": "3", "out": "out/first_lines.txt"}),
        ("s3", "count_lines", {"path": _from("s2")}, {"path": "out/first_lines.txt"}),
    ], "3")
    goal = render_instruction(FILES, graph, trace, seed=0, style="goal")
    assert [s.text for s in goal.sentences] == [
        f"In a new file (file A), write {GREP}.",
        "In a new file (file B), write the first `3` lines of file A, in their order."]
    assert "another" not in goal.text


def test_a_build_task_opens_with_a_motivation_its_graph_keeps():
    """A log lookup and a line count keep "Support is seeing errors again..." but not "the
    evidence pulled out of the logs" (that line needs lines or matches pulled out)."""
    scenario = FILES.spec.scenario("incident_triage")
    graph = WorkflowGraph(ecosystem="files", shape="chain", scenario="incident_triage", steps=[
        Step(id="s1", tool="most_errors_log", bind={}),
        Step(id="s2", tool="count_lines", bind={"path": _from("s1")})])
    trace = Trace(steps=[_step("s1", "most_errors_log", {}, "logs/api.log\n"),
                         _step("s2", "count_lines", {"path": "logs/api.log"}, "12\n")])
    checks = [Check(kind="answer", key="answer.txt", expected="12")]
    kept = [m.text for m in scenario.motivations if m.text.startswith("Support")]
    openings = {render_instruction(FILES, graph, trace, seed, checks=checks).text.split("\n")[0]
                for seed in range(12)}
    assert len(scenario.motivations) > len(kept) and openings == set(kept), openings
