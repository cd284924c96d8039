"""Reconstruct tasks in Docker: planned, cased, verified and gated through the pipeline;
the agent's workspace holds the public examples and no byte of a hidden case."""

import json
import os

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from tasks.plan.planner import plan_candidates
from tasks.reconstruct.cases import run_cases
from tasks.reconstruct.examples import write_examples
from tasks.reconstruct.program import PROGRAM, installer, reference_program
from tasks.verify.verifier import run_verifier

pytestmark = pytest.mark.docker

RUN_ID = f"itest-reconstruct-{os.getpid()}"  # unique: other checkouts may share the engine
ECOSYSTEMS = ("files", "sql")


@pytest.fixture(scope="module")
def outcomes():
    done = {}
    for name in ECOSYSTEMS:
        candidates, _ = plan_candidates(ecosystem(name), 5, run_seed=5,
                                        kinds={"reconstruct": 1})
        done[name] = [build_candidate(c, name, DockerConfig(), RUN_ID) for c in candidates]
    yield done
    close_run(RUN_ID)


def _accepted(outcomes, name):
    tasks = [o.task for o in outcomes[name] if o.task]
    assert tasks, [(o.attempt.stage, o.attempt.reason, o.attempt.detail)
                   for o in outcomes[name]]
    return tasks


@pytest.mark.parametrize("name", ECOSYSTEMS)
def test_accepted_reconstruct_tasks_pass_the_reference_only(outcomes, name):
    for task in _accepted(outcomes, name):
        assert task.kind == "reconstruct"
        assert (task.public_cases, task.hidden_cases) == (2, 3)
        gate = task.gate
        assert gate.baseline_reward == 0 and gate.reference_reward == 1
        assert gate.memorizer_reward == 0
        assert gate.hardcoded_reward in (None, 0.0)  # None: the program makes no choice
        assert gate.partial_reward == 0  # the program minus its last (mutating) step
        assert gate.empty_reward is None and gate.literals_reward is None
        cases = json.loads(task.cases_json)
        assert [c["public"] for c in cases] == [True, True, False, False, False]
        assert f"bash {PROGRAM} DIR" in task.instruction
        assert "examples/<case>/input/" in task.instruction
        for case in cases:  # public names are shown, hidden ones only in the verifier
            assert (case["name"] in task.instruction) == case["public"]
            assert (f'"name": "{case["name"]}"' in task.verifier_py) != case["public"]
    for o in outcomes[name]:
        if not o.task:
            assert o.attempt.status == "rejected" and o.attempt.reason and o.attempt.detail


def test_the_verifier_reports_three_levels_and_fails_an_input_invariant_program(outcomes):
    task = _accepted(outcomes, "sql")[0]
    eco = ecosystem("sql")
    trace = Trace.model_validate_json(task.trace_json)
    with provider_for(DockerConfig().for_ecosystem(eco), RUN_ID).sandbox() as sb:
        assert run_verifier(sb, task.verifier_py).reward == 0  # no program
        done = sb.exec(["bash", "-s"], stdin=task.solution_sh.encode(),
                       env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=60)
        assert done.exit_code == 0, done.stderr
        result = sb.exec(["python3", "-", "--root", ".", "--logs", "/tmp/logs"],
                         stdin=task.verifier_py.encode(), timeout=300)
        assert result.exit_code == 0, result.stderr
        reward = json.loads(sb.read_file("/tmp/logs/reward.json"))
        assert reward["reward"] == 1 and reward["cases_passed"] == reward["cases_total"] == 3
        assert reward["structure"] == reward["semantics"] == reward["anti_shortcut"] == 1
        # a program that writes the same outputs whatever its input: right on no more
        # than one case, and its outputs do not vary
        constant = installer("#!/usr/bin/env bash\nexit 0\n")
        sb.exec(["bash", "-s"], stdin=constant.encode(),
                env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=60)
        sb.exec(["python3", "-", "--root", ".", "--logs", "/tmp/logs"],
                stdin=task.verifier_py.encode(), timeout=300)
        reward = json.loads(sb.read_file("/tmp/logs/reward.json"))
        assert reward["reward"] == 0 and reward["structure"] == 1
        assert reward["semantics"] == 0 and reward["anti_shortcut"] == 0
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    assert reference_program(eco, graph, trace).rstrip() in task.solution_sh


@pytest.mark.parametrize("name", ECOSYSTEMS)
def test_no_hidden_case_byte_is_anywhere_in_the_agents_environment(outcomes, name):
    """The agent's container (image and workspace, laid out as the gate lays it out) holds
    no line of any hidden case's seed files that the public cases do not also hold."""
    task = _accepted(outcomes, name)[0]
    eco = ecosystem(name)
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    trace = Trace.model_validate_json(task.trace_json)
    program = reference_program(eco, graph, trace)
    config = DockerConfig().for_ecosystem(eco)
    with provider_for(config, RUN_ID).sandbox() as sb:
        cases = run_cases(sb, eco, graph, trace, program, task.seed)
    assert [c.seed for c in cases] == [c["seed"] for c in json.loads(task.cases_json)]
    public = {line for c in cases if c.public for data in c.files.values()
              for line in data.splitlines()}
    hidden = sorted({line for c in cases if not c.public for data in c.files.values()
                     for line in data.splitlines()
                     if len(line) >= 16 and line not in public and b"\0" not in line})
    assert len(hidden) > 10
    with provider_for(config, RUN_ID).sandbox() as sb:  # a fresh container: the agent's
        write_examples(sb, cases)
        assert sb.exec(["test", "-d", "examples/case-a/expected"]).exit_code == 0
        sb.write_files({"/tmp/hidden.txt": b"\n".join(hidden) + b"\n"})
        found = sb.exec(["bash", "-c", "grep -rlF -f /tmp/hidden.txt / --exclude-dir=proc "
                         "--exclude-dir=sys --exclude-dir=dev 2>/dev/null "
                         "| grep -vx /tmp/hidden.txt || true"], timeout=300)
        assert found.exit_code == 0 and found.stdout.strip() == "", found.stdout[:2000]
        # the probe of the check: the same lines are found where they are put
        sb.write_files({"/tmp/leak/x.txt": hidden[0] + b"\n"})
        found = sb.exec(["grep", "-rlF", "-f", "/tmp/hidden.txt", "/tmp/leak"])
        assert found.stdout.strip() == "/tmp/leak/x.txt"
