"""Fault injectors of the built-in ecosystems, on both backends: each one plants its defect
(the realized state differs from the healthy one in exactly the entry it breaks), its
repair lookup finds nothing in a healthy workspace, and its repair steps, run as a fix
task's first steps, leave the state exactly as healthy as the seed made it."""

import os

import pytest

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.candidate import ecosystem, sandbox_opener
from flows.providers import close_run
from schemas.graph import Candidate
from tasks.commands import render_shell
from tasks.execute import execute_graph
from tasks.plan import plan_graph
from tasks.realize import LiveEnvironment, probe, state_without

RUN = f"itest-injectors-{os.getpid()}"
INJECTORS = [(name, f.name) for name in ("files",)
             for f in (ecosystem(name).spec.faults.injectors if ecosystem(name).spec.faults
                       else [])]
SEED = 11


@pytest.fixture(params=[pytest.param(LocalConfig(), id="local"),
                        pytest.param(DockerConfig(), id="docker", marks=pytest.mark.docker)])
def backend(request):
    yield request.param
    close_run(RUN)


def _differing(a: dict, b: dict) -> list[str]:
    return sorted(f"{s}/{k}" for s in set(a) | set(b)
                  for k in set(a.get(s, {})) | set(b.get(s, {}))
                  if a.get(s, {}).get(k) != b.get(s, {}).get(k))


def test_every_builtin_with_faults_declares_five_injectors():
    assert {name for name, _ in INJECTORS} == {"files"}
    for name in {name for name, _ in INJECTORS}:
        assert len([f for n, f in INJECTORS if n == name]) >= 5


@pytest.mark.parametrize(("name", "fault"), INJECTORS, ids=[f"{n}-{f}" for n, f in INJECTORS])
def test_an_injector_plants_its_defect_and_its_repair_removes_it(backend, name, fault):
    eco = ecosystem(name)
    repair = eco.spec.fault(fault).repair
    graph = plan_graph(eco, SEED, fault=fault)
    candidate = Candidate(candidate_id=f"injector-{fault}", index=0, ecosystem=name,
                          seed=SEED, graph=graph.model_copy(
                              update={"steps": graph.steps[:len(repair)]}))
    assert [s.tool for s in candidate.graph.steps] == repair
    opener = sandbox_opener(eco, backend, RUN, candidate)
    with LiveEnvironment(eco, SEED, opener) as healthy_env:
        healthy = healthy_env.before
        lookup = eco.spec.tool(repair[0])
        found = healthy_env.sandbox.exec(["bash", "-c", render_shell(lookup.command, {})])
        assert found.exit_code != 0 and not found.stdout.strip(), (
            f"{repair[0]} finds a defect in the healthy workspace: {found.stdout!r}")
    with LiveEnvironment(eco, SEED, opener, fault=fault) as env:
        broken = _differing(env.before, healthy)
        assert len(broken) == 1, broken
        trace, _ = execute_graph(env, eco, candidate, max_repairs=0)
        repaired = probe(env.sandbox, eco)
    assert f"files/{trace.steps[-1].args['path']}" == broken[0]
    answer = eco.spec.answer_file
    assert _differing(state_without(repaired, answer), state_without(healthy, answer)) == []
