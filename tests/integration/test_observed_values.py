"""Observed values on the real engine: a lookup's output binds a later step's typed input,
and the later call receives exactly what the lookup printed in the sandbox."""

import os

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem, sandbox_opener
from flows.run.providers import close_run
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Trace
from tasks.core.failures import StageFailure
from tasks.execute.realize import LiveEnvironment
from tasks.execute.run_graph import execute_graph
from tasks.plan.planner import consumes_observed, plan_candidates

pytestmark = pytest.mark.docker
RUN = f"itest-observed-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _close_run():
    yield
    close_run(RUN)


@pytest.mark.parametrize("name", ["files", "git", "service", "sql"])
def test_a_later_step_receives_the_value_a_lookup_printed(name):
    eco = ecosystem(name)
    candidates, _ = plan_candidates(eco, 40, 3, {2: 1.0, 3: 1.0})
    observing = [c for c in candidates if consumes_observed(c.graph, eco)]
    assert observing, "the planner made no graph that consumes an observed value"
    for candidate in observing[:4]:
        outcome = build_candidate(candidate, name, DockerConfig(), RUN)
        if outcome.task is None:
            continue
        trace = Trace.model_validate_json(outcome.task.trace_json)
        ran = {st.step_id: st for st in trace.steps}
        graph = {s.id: s for s in candidate.graph.steps}
        checked = 0
        for st in trace.steps:
            for pname, b in graph[st.step_id].bind.items():
                up = ran.get(b.step or "")
                if b.kind != "step" or up is None or not eco.spec.tool(up.tool).observes_value:
                    continue
                printed = up.observation.stdout.strip()
                assert printed and st.args[pname] == printed == str(up.output)
                assert printed in st.command
                checked += 1
        assert checked, "no executed step took a looked-up value"
        return
    pytest.fail(f"none of {len(observing[:4])} observing {name} candidates was accepted")


def _service_graph(field: Binding, write: str = "set_status") -> Candidate:
    """``write`` on a ticket (set_status: to `closed`), then the ticket's ``field``."""
    first = Step(id="s1", tool="set_status", bind={
        "ticket": Binding(kind="sample", facet="resolvable_ticket"),
        "status": Binding(kind="literal", value="closed")}) if write == "set_status" else \
        Step(id="s1", tool=write, bind={"ticket": Binding(kind="sample", facet="active_ticket")})
    graph = WorkflowGraph(ecosystem="service", shape="chain", steps=[first, Step(
        id="s2", tool="ticket_field", bind={"ticket": Binding(kind="step", step="s1"),
                                            "field": field})])
    return Candidate(candidate_id="echo", index=0, ecosystem="service", seed=5, graph=graph)


def _execute(candidate: Candidate, max_repairs: int):
    eco = ecosystem("service")
    opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
    with LiveEnvironment(eco, candidate.seed, opener) as env:
        return execute_graph(env, eco, candidate, max_repairs=max_repairs)


def test_an_answer_the_task_itself_writes_is_degenerate_and_redrawn():
    """Closing a ticket and then answering its status hands the solver its answer: the
    final read is ``degenerate``.  With a sampled field a repair draws another one, and
    keeps it where it reports on the change without giving it away (an escalated ticket's
    escalation count, not its `urgent` priority); after a close no field does (its title
    is the same without the close), so the task ends at the write."""
    with pytest.raises(StageFailure) as err:
        _execute(_service_graph(Binding(kind="literal", value="status")), max_repairs=0)
    assert err.value.reason == "degenerate"
    assert "the answer shows in the code span `closed`" in err.value.detail
    sampled = Binding(kind="sample", facet="ticket_field")
    trace, _ = _execute(_service_graph(sampled, write="escalate_ticket"), 2)
    assert trace.answer is not None and trace.answer.strip().lower() != "urgent"
    trace, graph = _execute(_service_graph(sampled), 2)
    assert trace.answer is None and [s.tool for s in graph.steps] == ["set_status"]
    assert [(r.kind, r.reason) for r in trace.repairs] == [("truncate", "purposeless")]
