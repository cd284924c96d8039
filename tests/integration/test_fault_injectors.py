"""Fault injectors of the built-in ecosystems, on every backend each ecosystem runs on:
each one plants its defect (the realized state differs from the healthy one in exactly
the entry it breaks), its repair finds nothing to repair in a healthy workspace (the
lookup fails, or the sampler finds no defect), and its repair steps, run as a fix task's
first steps, leave the state exactly as healthy as the seed made it."""

import json
import os
import time

import pytest

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.run.candidate import ecosystem, sandbox_opener
from flows.run.providers import close_run
from schemas.graph import Candidate
from tasks.core.failures import StageFailure
from tasks.execute.realize import LiveEnvironment, probe, state_without
from tasks.execute.run_graph import execute_graph
from tasks.exports.harbor.identity import MANIFEST_PY
from tasks.plan.planner import plan_graph

RUN = f"itest-injectors-{os.getpid()}"
INJECTORS = [(name, f.name) for name in ("files", "git", "service", "sql")
             for f in (ecosystem(name).spec.faults.injectors if ecosystem(name).spec.faults
                       else [])]
BACKENDS = {"local": LocalConfig(), "docker": DockerConfig()}
CASES = [pytest.param(kind, name, fault, id=f"{kind}-{name}-{fault}",
                      marks=[pytest.mark.docker] if kind == "docker" else [])
         for name, fault in INJECTORS for kind in ecosystem(name).spec.backends]
SEED = 11


@pytest.fixture(scope="module", autouse=True)
def _close_run():
    yield
    close_run(RUN)


def _differing(a: dict, b: dict) -> list[str]:
    return sorted(f"{s}/{k}" for s in set(a) | set(b)
                  for k in set(a.get(s, {})) | set(b.get(s, {}))
                  if a.get(s, {}).get(k) != b.get(s, {}).get(k))


def test_every_builtin_with_faults_declares_five_injectors():
    assert {name for name, _ in INJECTORS} == {"files", "git", "service", "sql"}
    for name in {name for name, _ in INJECTORS}:
        assert len([f for n, f in INJECTORS if n == name]) >= 5


@pytest.mark.parametrize(("kind", "name", "fault"), CASES)
def test_an_injector_plants_its_defect_and_its_repair_removes_it(kind, name, fault):
    eco, backend = ecosystem(name), BACKENDS[kind]
    repair = eco.spec.fault(fault).repair
    graph = plan_graph(eco, SEED, fault=fault)
    candidate = Candidate(candidate_id=f"injector-{fault}", index=0, ecosystem=name,
                          seed=SEED, graph=graph.model_copy(
                              update={"steps": graph.steps[:len(repair)]}))
    assert [s.tool for s in candidate.graph.steps] == repair
    opener = sandbox_opener(eco, backend, RUN, candidate)
    with LiveEnvironment(eco, SEED, opener) as healthy_env:
        healthy = healthy_env.before
        with pytest.raises(StageFailure) as nothing_to_find:
            execute_graph(healthy_env, eco, candidate, max_repairs=0)
        assert nothing_to_find.value.reason in ("tool_error", "binding"), nothing_to_find.value
    with LiveEnvironment(eco, SEED, opener, fault=fault) as env:
        sections = eco.spec.probe_sections
        broken = [e for e in _differing(env.before, healthy)  # derived sections aside
                  if e.split("/")[0] not in sections or sections[e.split("/")[0]].checked]
        assert len(broken) == 1, broken
        trace, _ = execute_graph(env, eco, candidate, max_repairs=0)
        repaired = probe(env.sandbox, eco)
    fixer = eco.spec.tool(repair[-1])
    assert broken[0].split("/", 1)[1] == trace.steps[-1].args[str(fixer.returns.from_param)]
    answer = eco.spec.answer_file
    assert _differing(state_without(repaired, answer), state_without(healthy, answer)) == []


def _manifest(env: LiveEnvironment) -> dict:
    """Every file and folder of the workspace with its mode, owner and content digest
    (git's index and reflogs aside), as check-harbor compares a rebuilt image."""
    sb = env.sandbox
    done = sb.exec(["python3", "-c", MANIFEST_PY, sb.workdir])
    assert done.exit_code == 0, done.stderr
    return {path.removeprefix(sb.workdir): entry
            for path, entry in json.loads(done.stdout).items()}


@pytest.mark.parametrize(("kind", "name", "fault"),
                         [c for c in CASES if c.values[1] == "git"])
def test_a_planted_repository_is_the_same_on_every_realization(kind, name, fault):
    """Git writes the time into the objects it makes: a plant that commits or tags must pin
    its dates, or an exported image's repository differs from the factory's."""
    eco = ecosystem(name)
    seed = next((s for s in range(SEED, SEED + 40) if _makes_objects(eco, s, fault)), SEED)
    candidate = Candidate(candidate_id=f"identity-{fault}", index=0, ecosystem=name,
                          seed=seed, graph=plan_graph(eco, seed, fault=fault))
    opener = sandbox_opener(eco, BACKENDS[kind], RUN, candidate)
    with LiveEnvironment(eco, seed, opener, fault=fault) as env:
        first = _manifest(env)
    time.sleep(1.1)  # a second later: an unpinned date would now differ
    with LiveEnvironment(eco, seed, opener, fault=fault) as env:
        assert _manifest(env) == first


def _makes_objects(eco, seed: int, fault: str) -> bool:
    """The plant's commands for ``seed`` make a commit or an annotated tag."""
    try:
        script = eco.seed_state(seed, fault)[".seed/build.sh"].decode()
    except LookupError:
        return False
    return "git commit" in script or " -a -m " in script
