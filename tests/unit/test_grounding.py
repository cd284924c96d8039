"""Grounding: a value is usable only once the instruction, the schema or an observation
showed it."""

import json

from schemas.records import FunctionCall, Message, ToolCall
from tasks.rules.grounding import appears, checked_values, first_ungrounded

TOOLS = [{"type": "function", "function": {
    "name": "set_status", "description": "Set a status: open, in_progress or closed.",
    "parameters": {"type": "object", "properties": {"ticket": {"type": "integer"},
                                                    "status": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "bash", "parameters": {}}}]


def call(turn, name, args, reasoning=""):
    return Message(role="assistant", content="", reasoning_content=reasoning,
                   tool_calls=[ToolCall(id=f"call_{turn}", function=FunctionCall(
                       name=name, arguments=json.dumps(args)))])


def observed(turn, text):
    return Message(role="tool", tool_call_id=f"call_{turn}", content=text)


def conversation(instruction, *rest):
    return [Message(role="system", content="sys"), Message(role="user", content=instruction),
            *rest]


def test_values_from_instruction_schema_and_earlier_observations_are_grounded():
    messages = conversation(
        "Create a ticket titled `Fix login`, then close it.",
        call(1, "set_status", {"ticket": 42, "status": "in_progress"}),
        observed(1, "created 42\n"),
    )
    # 42 is only printed after the first call that uses it
    problem = first_ungrounded(messages, TOOLS)
    assert problem and "set_status argument ticket='42'" in problem
    messages = conversation(
        "Create a ticket titled `Fix login`, then close it.",
        call(1, "bash", {"command": "curl ..."}), observed(1, "created 42\n"),
        call(2, "set_status", {"ticket": 42, "status": "closed"}, "Ticket `42` was created."),
        observed(2, "42"),
        Message(role="assistant", content="Closed ticket `42`."),
    )
    assert first_ungrounded(messages, TOOLS, [{"title": "Fix login"},
                                              {"ticket": 42, "status": "closed"}]) is None


def test_whole_tokens_only():
    assert appears("42", ["id 42."]) and not appears("42", ["id 142"])
    assert not appears("out/a.txt", ["out/a.txt.bak"]) and not appears("42", ["42.5"])
    assert appears("out/a.txt", ["wrote out/a.txt."])
    assert appears("-v", ["use -v here"])  # no word edge to respect at a leading dash


def test_instruction_values_must_be_code_spans():
    messages = conversation("Count the lines of notes.txt.",
                            call(1, "bash", {"command": "wc -l notes.txt"}))
    assert "argument path='notes.txt'" in first_ungrounded(messages, TOOLS, [{"path": "notes.txt"}])


def test_reasoning_and_answer_may_only_quote_what_was_seen():
    messages = conversation("Count the lines of `notes.txt`.",
                            call(1, "bash", {"command": "wc -l < notes.txt"},
                                 "The count will be `12`."))
    assert "reasoning quotes `12`" in first_ungrounded(messages, TOOLS, [{"path": "notes.txt"}])
    messages = conversation("Count the lines of `notes.txt`.",
                            call(1, "bash", {"command": "wc -l < notes.txt"}),
                            observed(1, "[output truncated to the last 3 characters]\n..."),
                            Message(role="assistant", content="There are `12` lines."))
    assert "answer quotes `12`" in first_ungrounded(messages, TOOLS, [{"path": "notes.txt"}])


ROUTE_CALL = ("curl -sSf -X PUT -d '{\"status\": \"closed\"}' "
              "http://127.0.0.1:8080/tickets/12/status")


def test_a_terminal_call_to_a_route_never_shown_is_rejected():
    messages = conversation("Close ticket `12`.", call(1, "bash", {"command": ROUTE_CALL}))
    problem = first_ungrounded(messages, TOOLS, [{"ticket": "12"}])
    assert problem == ("message 2: bash uses the name 'status' appears in neither the "
                       "instruction, the tool schema nor an earlier observation")
    # once the API document showed the field and the route, the same call is grounded
    doc = "- ``PUT /tickets/<id>/status`` ``{\"status\"}`` -> ticket; statuses: ``closed``"
    messages = conversation("Close ticket `12`.", call(1, "bash", {"command": "cat API.md"}),
                            observed(1, doc), call(2, "bash", {"command": ROUTE_CALL}))
    assert "'API.md'" in first_ungrounded(messages, TOOLS, [{}, {"ticket": "12"}])
    messages = conversation("Close ticket `12`; `API.md` documents the API.",
                            call(1, "bash", {"command": "cat API.md"}),
                            observed(1, doc), call(2, "bash", {"command": ROUTE_CALL}))
    assert first_ungrounded(messages, TOOLS, [{}, {"ticket": "12"}]) is None


def test_a_route_shown_only_after_its_use_is_rejected():
    doc = "- ``PUT /tickets/<id>/assignee``"
    messages = conversation(
        "Unassign ticket `12`; `API.md` documents the API.",
        call(1, "bash", {"command": "curl -X PUT http://127.0.0.1:8080/tickets/12/assignee"}),
        observed(1, "{}"), call(2, "bash", {"command": "cat API.md"}), observed(2, doc))
    assert "uses the name 'tickets'" in first_ungrounded(messages, TOOLS, [{}, {}])


def test_the_function_view_keeps_its_rule_for_arguments():
    messages = conversation("Close ticket `12`.",
                            call(1, "set_status", {"ticket": 12, "status": "closed"}))
    assert first_ungrounded(messages, TOOLS) is None  # `closed` is in the tool's schema


def test_a_shell_call_is_checked_by_its_names_in_either_view():
    """A ``bash`` call's command is never looked up as one value, with or without the
    values of a terminal view: what it uses must have been shown."""
    command = "head -n 3 data/orders.csv"
    seen = conversation("Look at `data/orders.csv`.", call(1, "bash", {"command": command}))
    assert first_ungrounded(seen, TOOLS) is None
    assert first_ungrounded(seen, TOOLS, [checked_values("bash", {"command": command})]) \
        is None
    unseen = conversation("Look at the orders.", call(1, "bash", {"command": command}))
    assert "uses the name 'data/orders.csv'" in first_ungrounded(unseen, TOOLS)


def test_a_written_file_counts_by_the_names_its_lines_use():
    program = ("#!/usr/bin/env bash\n# filter the rows\ncd \"$1\"\n"
               "awk 'NR>1' data/orders.csv > out/rows.csv\nsort out/rows.csv > out/sorted.csv\n")
    tools = [*TOOLS, {"type": "function", "function": {"name": "write_file", "parameters": {}}}]
    args = {"path": "solution/run.sh", "content": program}
    assert checked_values("write_file", args) == {"path": "solution/run.sh",
                                                  "content name 1": "data/orders.csv"}
    heredoc = f"cat > solution/run.sh <<'END'\n{program}END"
    for instruction, problem in (
            ("Write `solution/run.sh` reading `data/orders.csv`.", None),
            ("Write `solution/run.sh` reading the orders.",
             "uses the name 'data/orders.csv'")):
        function = conversation(instruction, call(1, "write_file", args))
        terminal = conversation(instruction, call(1, "bash", {"command": heredoc}))
        for found in (first_ungrounded(function, tools),
                      first_ungrounded(terminal, tools,
                                       [checked_values("write_file", args)])):
            assert (found is None) if problem is None else (problem in found)
