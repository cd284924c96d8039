"""Describers on the real engine: a description replaces a literal only when its command,
run in the initial state, prints exactly that literal."""

import dataclasses
import os

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem, sandbox_opener
from flows.run.providers import close_run
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Trace
from tasks.execute.realize import LiveEnvironment
from tasks.execute.run_graph import execute_graph
from tasks.instruct.describe import describe, with_resolutions
from tasks.instruct.instruction import context_text, render_instruction

pytestmark = pytest.mark.docker
RUN = f"itest-describers-{os.getpid()}"

AMBIGUOUS = """curl -sSf http://127.0.0.1:8080/tickets
| python3 -c 'import json, sys; [print(t["id"]) for t in json.load(sys.stdin)["tickets"]]'"""
"""A command that prints every ticket id: a description it "resolves" is ambiguous."""


@pytest.fixture(scope="module", autouse=True)
def _close_run():
    yield
    close_run(RUN)


def _candidate() -> Candidate:
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[
        Step(id="s1", tool="set_status", bind={
            "ticket": Binding(kind="sample", facet="resolvable_ticket"),
            "status": Binding(kind="literal", value="closed")})])
    return Candidate(candidate_id="describe", index=0, ecosystem="service", seed=5,
                     graph=graph)


def _described(eco, candidate=None):
    candidate = candidate or _candidate()
    opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
    with LiveEnvironment(eco, candidate.seed, opener) as env:
        trace, graph = execute_graph(env, eco, candidate, max_repairs=0)
        found = describe(env, eco, graph, trace, env.before,
                         candidate.seed)
        return found, trace, graph, env.before


def test_a_unique_description_replaces_the_id_and_the_trace_shows_its_lookup():
    eco = ecosystem("service")
    found, trace, graph, before = _described(eco)
    ticket = trace.steps[0].args["ticket"]
    [(literal, d)] = found.items()
    assert literal == ticket and d.shown == before["tickets"][ticket]["title"]
    assert d.call.observation.stdout.strip() == ticket
    text = render_instruction(eco, graph, trace, 0, "goal", (), {ticket: d.text}).text
    assert f"`{ticket}`" not in text and f"the ticket titled `{d.shown}`" in text
    calls = with_resolutions(trace, found).steps[0].discoveries
    names = [c.name for c in calls]
    naming = [k for k, c in enumerate(calls) if ticket in c.args.values()]
    assert "find_ticket" in names and names.index("find_ticket") < min(naming, default=99)
    spec = render_instruction(eco, graph, trace, 0, "spec", (), {}).text
    assert f"`{ticket}`" in spec  # a style is given descriptions only where it uses them


def test_a_describer_whose_command_prints_several_rows_is_refused():
    eco = ecosystem("service")
    spec = eco.spec.model_copy(update={"describers": [
        d.model_copy(update={"command": AMBIGUOUS}) if d.name == "find_ticket" else d
        for d in eco.spec.describers]})
    found, _, _, _ = _described(dataclasses.replace(eco, spec=spec))
    assert found == {}  # the literal stays


def test_a_task_naming_its_ticket_by_title_needs_observation():
    """The goal-level task does not write the id, so the open-loop control (the reference
    solution with another ticket's id) fails, and its trajectories show the lookup."""
    outcome = build_candidate(_candidate(), "service", DockerConfig(), RUN)
    task = outcome.task
    assert task is not None, outcome.attempt.detail
    ticket = Trace.model_validate_json(task.trace_json).steps[0].args["ticket"]
    assert f"`{ticket}`" not in task.instruction and "the ticket titled `" in task.instruction
    assert task.gate.open_loop_reward == 0.0 and task.needs_observation is True
    function = next(r for r in outcome.trajectories if r.action_space == "function")
    calls = [c.function.name for m in function.messages for c in m.tool_calls or []]
    assert calls.index("find_ticket") < calls.index("set_status")



def _one_step(eco: str, tool: str, bind: dict[str, Binding], seed: int) -> Candidate:
    graph = WorkflowGraph(ecosystem=eco, shape="chain", steps=[Step(id="s1", tool=tool,
                                                                      bind=bind)])
    return Candidate(candidate_id=f"describe-{tool}", index=0, ecosystem=eco, seed=seed,
                     graph=graph)


def test_the_database_file_is_named_by_a_table_it_holds():
    """sql's ``find_database``: the goal-level instruction names the shop's database by
    the head its context defines (a SQLite file with the shop's tables), with no sentence
    saying it again, and the resolving call (which prints the file) comes before the
    first query."""
    eco = ecosystem("sql")
    found, trace, graph, _ = _described(eco, _one_step("sql", "top_spender", {
        "db": Binding(kind="state", value="shop.db"),
        "status": Binding(kind="sample", facet="order_status")}, seed=3))
    [(literal, d)] = found.items()
    assert literal == "shop.db" and d.shown in {"customers", "products", "orders",
                                                "order_items"}
    assert d.call.observation.stdout == "shop.db\n"
    text = render_instruction(eco, graph, trace, 0, "goal", (), {literal: d.text}).text
    assert "shop.db" not in text  # named by its head, which the context defines
    assert "holding table" not in text and "the shop's database" in text
    assert f"`{d.shown}`" in context_text(eco, "goal")
    calls = [c.name for c in with_resolutions(trace, found).steps[0].discoveries]
    assert calls.index("find_database") < calls.index("show_schema")


def test_a_team_is_named_by_its_lead():
    """service's ``find_team``: the team a ticket moves to is named by its lead's name,
    which the command resolves through the users and the teams."""
    eco = ecosystem("service")
    found, trace, graph, before = _described(eco, _one_step("service", "move_ticket", {
        "ticket": Binding(kind="sample", facet="resolvable_ticket"),
        "team": Binding(kind="sample", facet="other_ticket_team", of=None)}, seed=5))
    team = trace.steps[0].args["team"]
    d = found[team]
    lead = before["users"][before["teams"][team]["lead"]]["name"]
    assert d.shown == lead and d.call.observation.stdout == f"{team}\n"
    text = render_instruction(eco, graph, trace, 0, "goal", (), {team: d.text}).text
    assert f"`{team}`" not in text and f"Find the team led by `{lead}`." in text
    assert "moved to that team" in text  # found by its own sentence, then referred to
