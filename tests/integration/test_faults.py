"""Planted faults: each failure category is classified, and repairable ones are repaired.

The `faults` fixture ecosystem (tests/fixtures/ecosystems/faults) has one tool per
category; each test runs `write_notes` and then the faulty tool on its output.
"""

import os
import subprocess

import docker
import pytest

from environments.config import DockerConfig, LocalConfig
from flows.candidate import backend_for, build_candidate, ecosystem
from flows.providers import close_run
from schemas.graph import Binding, Candidate, Step, WorkflowGraph

FAULTS = "tests/fixtures/ecosystems/faults"
RUN_ID = f"itest-faults-{os.getpid()}"  # unique: other checkouts may share the engine
ECO = ecosystem(FAULTS)


def planted(tool: str) -> Candidate:
    spec = ECO.spec.tool(tool)
    bind = {"path": Binding(kind="step", step="s1")}
    if "out" in {p.name for p in spec.params}:
        bind["out"] = Binding(kind="literal", value=f"out/{tool}.txt")
    for p in spec.params:
        if p.sample:
            bind[p.name] = Binding(kind="sample", facet=p.sample.facet, of=p.sample.of)
    steps = [Step(id="s1", tool="write_notes",
                  bind={"path": Binding(kind="state", value="notes/note1.txt"),
                        "out": Binding(kind="literal", value="out/copy.txt")}),
             Step(id="s2", tool=tool, bind=bind)]
    graph = WorkflowGraph(ecosystem="faults", shape="chain", steps=steps)
    return Candidate(candidate_id=f"fault-{tool}", index=0, ecosystem="faults", seed=1,
                     graph=graph)


# the docker backend through its in-container runner, and with one docker exec per command
DOCKER_CONFIGS = {"docker": DockerConfig(), "docker-exec": DockerConfig(exec_via="docker-exec")}


@pytest.fixture(scope="module", params=[
    pytest.param(LocalConfig(), id="local"),
    *(pytest.param(c, id=i, marks=pytest.mark.docker) for i, c in DOCKER_CONFIGS.items()),
])
def backend(request):
    yield backend_for(ECO, request.param)
    close_run(RUN_ID)


@pytest.mark.parametrize("tool,reason", [
    ("read_missing", "environment"),
    ("missing_binary", "environment"),
    ("explode", "tool_error"),
    ("hang", "timeout"),
    ("coin_flip", "nondeterministic"),
    ("most_common_word", "ambiguous"),
])
def test_unrepairable_faults_are_classified(backend, tool, reason):
    outcome = build_candidate(planted(tool), FAULTS, backend, RUN_ID)
    assert outcome.task is None
    assert outcome.attempt.reason == reason, outcome.attempt.detail
    if reason != "nondeterministic":  # found by the gate's second execution instead
        assert outcome.attempt.detail.startswith(f"s2 {tool}"), outcome.attempt.detail


@pytest.mark.parametrize("tool,reason", [("take_lines", "binding"),
                                         ("empty_output", "degenerate")])
def test_repairable_faults_are_repaired_by_truncation(backend, tool, reason):
    without = build_candidate(planted(tool), FAULTS, backend, RUN_ID, max_repairs=0)
    assert without.task is None and without.attempt.reason == reason
    repaired = build_candidate(planted(tool), FAULTS, backend, RUN_ID, max_repairs=2)
    assert repaired.task is not None, repaired.attempt.detail
    assert repaired.task.tools == ["write_notes"]
    assert repaired.attempt.repairs and repaired.attempt.repairs[0].startswith(
        f"truncate s2 {reason}")
    assert repaired.task.gate.reference_reward == 1.0


def _host_processes(pattern: str) -> list[str]:
    """Matching processes that ran in one of this run's local sandboxes (their working
    directory is in it), so neither container processes, which show up on the host too,
    nor another checkout's tests running at the same time count."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    mine = []
    for pid in found.stdout.split():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:  # gone meanwhile
            continue
        if f"taskfactory-{RUN_ID}-" in cwd:
            mine.append(pid)
    return mine


def test_timeout_leaves_no_process_behind(backend):
    outcome = build_candidate(planted("hang"), FAULTS, backend, RUN_ID)
    assert outcome.attempt.reason == "timeout"
    if backend.type == "local":
        assert _host_processes("sleep 300") == []


@pytest.mark.docker
@pytest.mark.parametrize("config", DOCKER_CONFIGS.values(), ids=DOCKER_CONFIGS.keys())
@pytest.mark.parametrize("tool", ["fork_bomb", "memory_hog"])
def test_resource_faults_are_contained_on_docker(tool, config):
    backend = backend_for(ECO, config)
    outcome = build_candidate(planted(tool), FAULTS, backend, RUN_ID)
    assert outcome.task is None and outcome.attempt.reason == "resource", outcome.attempt.detail
    assert outcome.attempt.detail.startswith(f"s2 {tool}")
    close_run(RUN_ID)
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"taskfactory.run={RUN_ID}"}) == []
