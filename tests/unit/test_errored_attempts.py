"""Errored attempts (infrastructure failures) hold nothing and are superseded by a later
attempt of the same candidate; stats and the run tally count them apart."""

from __future__ import annotations

from environments.sandbox import InfrastructureError
from flows.run.candidate import engine_failure
from flows.run.infrastructure import errored
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from tasks.dataset import runs
from tasks.dataset.query import connect
from tasks.dataset.report.stats import report
from tests.support.dataset import write_outcomes

RUN = "r1"


def candidate(cid: str, index: int) -> Candidate:
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=[
        Step(id="s1", tool="count_lines", bind={"path": Binding(kind="state", value="a")})])
    return Candidate(candidate_id=cid, index=index, ecosystem="files", seed=index, graph=graph)


def outcome(cid: str, index: int, infrastructure: bool):
    exc = errored("execute", InfrastructureError("exec: the engine is unreachable")) \
        if infrastructure else RuntimeError("a task's own failure")
    return engine_failure(candidate(cid, index), "files", "docker", RUN, exc)


def test_errored_attempts_hold_nothing_and_a_later_attempt_supersedes_them(tmp_path):
    write_outcomes(tmp_path, RUN, [outcome("a", 0, True), outcome("b", 1, True),
                                   outcome("c", 2, False)])
    write_outcomes(tmp_path, RUN, [outcome("a", 0, False)])  # a resume ran "a" again
    con = connect(tmp_path)
    try:
        assert runs.held_candidates(con, "test") == {"a", "c"}
        tally = runs.tally(con, RUN)
        assert (tally.attempts, tally.accepted, tally.errored) == (3, 0, 1)
        assert tally.ecosystems["files"].rejected == {"sandbox/sandbox": 2}
        settled = con.execute(f"select candidate_id, status, stage, reason from "
                              f"{runs.SETTLED_ATTEMPTS} order by 1").fetchall()
        assert settled == [("a", "rejected", "sandbox", "sandbox"),
                           ("b", "errored", "execute", "engine"),
                           ("c", "rejected", "sandbox", "sandbox")]
        text = report(con)
    finally:
        con.close()
    section = text.split("## Errored")[1].split("##")[0]
    assert "| execute | engine | 1 | 1 |" in section  # one run again, one still errored
    assert "| files | 3 | 0 | 0 | 0 | 0 | 1 |" in text  # 3 candidates, 1 of them errored


def test_what_counts_as_an_infrastructure_failure():
    import docker.errors
    import httpx
    import requests

    from flows.run.infrastructure import infrastructure_reason

    def status(code: int) -> httpx.HTTPStatusError:
        request = httpx.Request("GET", "http://127.0.0.1/api/health")
        return httpx.HTTPStatusError("x", request=request,
                                     response=httpx.Response(code, request=request))

    def api(code: int, text: str) -> docker.errors.APIError:
        response = requests.Response()
        response.status_code = code
        return docker.errors.APIError("x", response=response, explanation=text)

    assert infrastructure_reason(InfrastructureError("gone")) == "engine"
    assert infrastructure_reason(requests.ConnectionError("refused")) == "engine"
    assert infrastructure_reason(api(500, "engine trouble")) == "engine"
    assert infrastructure_reason(api(409, "container abc is not running")) == "engine"
    assert infrastructure_reason(api(404, "No such container: abc")) == "engine"
    assert infrastructure_reason(api(400, "invalid mount config")) is None
    assert infrastructure_reason(httpx.ConnectError("refused")) == "prefect_api"
    assert infrastructure_reason(status(503)) == "prefect_api"
    assert infrastructure_reason(status(404)) is None
    assert infrastructure_reason(ValueError("a task's own")) is None
