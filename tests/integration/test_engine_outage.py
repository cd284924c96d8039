"""An engine that stops under running sandboxes: the failure is the infrastructure's.

Runs against a Docker engine of the test's own (tests/support/private_engine.py), which
it stops and starts again; the engine everyone else uses is never touched.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from environments.docker.backend import DockerProvider
from environments.docker.config import DockerConfig
from environments.sandbox import InfrastructureError
from flows.run.candidate import engine_failure
from flows.run.infrastructure import CandidateErrored, retried
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from tests.support.private_engine import private_engine

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def engine():
    with private_engine() as eng:
        yield eng


@pytest.fixture
def on_engine(engine, monkeypatch):
    """Sandboxes in this test talk to the private engine."""
    monkeypatch.setenv("DOCKER_HOST", engine.host)
    if not engine.answers():
        engine.start()
    return engine


@pytest.mark.parametrize("exec_via", ["runner", "docker-exec"])
def test_a_stopped_engine_is_an_infrastructure_error_not_an_exit_code(on_engine, exec_via):
    provider = DockerProvider(DockerConfig(exec_via=exec_via), f"outage-{uuid.uuid4().hex[:6]}")
    sb = provider.open()
    assert sb.exec(["true"]).exit_code == 0
    on_engine.stop()
    with pytest.raises(InfrastructureError, match="unreachable|stopped"):
        sb.exec(["echo", "hi"])
    with pytest.raises(InfrastructureError):
        sb.write_files({"a.txt": b"a"})
    with pytest.raises(InfrastructureError):
        provider.open()
    on_engine.start()
    # the engine is back, but it stopped the container: still not the command's fault
    with pytest.raises(InfrastructureError, match="stopped|not running"):
        sb.exec(["echo", "hi"])
    fresh = provider.open()
    assert fresh.exec(["echo", "back"]).stdout == "back\n"
    provider.close()
    assert provider.reap(provider.run_id) == 0  # close() removed both, the stopped one too


def test_retried_waits_for_the_engine_and_runs_again_in_a_fresh_sandbox(on_engine):
    provider = DockerProvider(DockerConfig(), f"outage-{uuid.uuid4().hex[:6]}")
    runs: list[str] = []

    def candidate() -> str:
        with provider.sandbox() as sb:
            runs.append(sb.name)
            if len(runs) == 1:  # the engine goes away under the first run, for 2 s
                on_engine.stop()
                threading.Timer(2.0, on_engine.start).start()
            return sb.exec(["echo", "done"]).stdout

    t0 = time.monotonic()
    assert retried(candidate, DockerConfig(), "candidate 0", engine_wait_s=120) == "done\n"
    assert len(runs) == 2 and runs[0] != runs[1]
    assert time.monotonic() - t0 < 120  # a correctness bound: it did not give up waiting
    provider.close()
    provider.reap(provider.run_id)


def test_an_engine_that_stays_away_gives_an_errored_attempt(on_engine):
    provider = DockerProvider(DockerConfig(), f"outage-{uuid.uuid4().hex[:6]}")
    on_engine.stop()
    with pytest.raises(CandidateErrored) as caught:
        retried(lambda: provider.open(), DockerConfig(), "candidate 0", tries=2,
                engine_wait_s=1)
    graph = WorkflowGraph(ecosystem="files", shape="chain", steps=[
        Step(id="s1", tool="count_lines", bind={"path": Binding(kind="state", value="a")})])
    candidate = Candidate(candidate_id="c0", index=0, ecosystem="files", seed=1, graph=graph)
    attempt = engine_failure(candidate, "files", "docker", "r", caught.value).attempt
    assert (attempt.status, attempt.stage, attempt.reason) == ("errored", "sandbox", "engine")
    assert "InfrastructureError" in attempt.detail and "unreachable" in attempt.detail
    on_engine.start()


def test_a_run_that_is_stopping_does_not_wait_for_the_engine(on_engine):
    provider = DockerProvider(DockerConfig(), f"outage-{uuid.uuid4().hex[:6]}")
    on_engine.stop()
    stopping = threading.Event()
    threading.Timer(1.0, stopping.set).start()  # Ctrl-C: the run closes its providers
    t0 = time.monotonic()
    with pytest.raises(CandidateErrored):
        retried(lambda: provider.open(), DockerConfig(), "candidate 0", engine_wait_s=300,
                stopping=stopping.is_set)
    assert time.monotonic() - t0 < 60  # a correctness bound: it did not wait 300 s
    on_engine.start()
