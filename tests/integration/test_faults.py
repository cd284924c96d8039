"""Planted faults: each failure category is classified, and repaired where it can be.

The `faults` fixture ecosystem (tests/fixtures/ecosystems/faults) has one tool per fault;
each test runs `write_notes` and then the faulty tool on its output, first with repair
off (the category must be named) and then with repair on (the repair kind must be the
one the fault calls for, and the task must pass the gate).
"""

import os
import shutil
import subprocess

import docker
import pytest

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.candidate import build_candidate, ecosystem
from flows.providers import close_run, provider_for
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace, Trace
from tasks.core.commands import render_command, solution_failure, solution_script
from tasks.gate.gate import run_solution
from tasks.stages.settings import CandidateSettings

NO_REPAIR = CandidateSettings(max_repairs=0)

FAULTS = "tests/fixtures/ecosystems/faults"
RUN_ID = f"itest-faults-{os.getpid()}"
ECO = ecosystem(FAULTS)


def planted(tool: str) -> Candidate:
    spec = ECO.spec.tool(tool)
    bind = {"path": Binding(kind="step", step="s1")}
    for p in spec.params:
        if p.sample:
            bind[p.name] = Binding(kind="sample", facet=p.sample.facet, of=p.sample.of)
        elif p.fresh:
            bind[p.name] = Binding(kind="literal", value=p.fresh.replace("{n}", ""))
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
    yield request.param
    close_run(RUN_ID)


CLASSIFIED = [
    ("read_config", "environment"), ("read_missing", "environment"),
    ("write_report", "environment"), ("missing_binary", "environment"), ("take_lines", "binding"),
    ("take_some_lines", "binding"), ("explode", "tool_error"), ("hang", "timeout"),
    ("empty_output", "degenerate"), ("most_common_word", "ambiguous"),
    ("failing_pipeline", "tool_error"),
]


@pytest.mark.parametrize("tool,reason", CLASSIFIED)
def test_faults_are_classified_with_repair_off(backend, tool, reason):
    outcome = build_candidate(planted(tool), FAULTS, backend, RUN_ID, NO_REPAIR)
    assert outcome.task is None
    assert outcome.attempt.reason == reason, outcome.attempt.detail
    assert outcome.attempt.detail.startswith(f"s2 {tool}"), outcome.attempt.detail


REPAIRED = [
    ("read_config", "provide_file"), ("write_report", "provide_dir"),
    ("take_some_lines", "rebind"), ("explode", "substitute"),
    ("take_lines", "truncate"), ("read_missing", "truncate"), ("missing_binary", "truncate"),
    ("hang", "truncate"), ("empty_output", "truncate"), ("most_common_word", "truncate"),
]


@pytest.mark.parametrize("tool,kind", REPAIRED)
def test_faults_are_repaired_into_accepted_tasks(backend, tool, kind):
    outcome = build_candidate(planted(tool), FAULTS, backend, RUN_ID)
    assert outcome.task is not None, outcome.attempt.detail
    trace = Trace.model_validate_json(outcome.task.trace_json)
    assert [r.kind for r in trace.repairs] == [kind]
    assert outcome.attempt.repairs[0].startswith(f"{kind} s2 ")
    assert trace.steps[0].command == "cp notes/note1.txt out/copy.txt"  # kept as it ran
    gate = outcome.task.gate
    assert (gate.baseline_reward, gate.reference_reward) == (0.0, 1.0)
    if kind == "truncate":
        assert outcome.task.tools == ["write_notes"]
    else:
        assert outcome.task.n_steps == 2


def test_a_failing_pipeline_fails_execution_with_the_message_of_the_gate(backend):
    """Execution runs tools under solve.sh's shell options: the pipeline that only
    pipefail sees fails there, summarized as the gate names the failing solve.sh line."""
    outcome = build_candidate(planted("failing_pipeline"), FAULTS, backend, RUN_ID,
                              NO_REPAIR)
    summary = "exit 3: awk: no header line"
    assert outcome.attempt.detail == f"s2 failing_pipeline: {summary}"

    spec = ECO.spec.tool("failing_pipeline")
    args = {"path": "notes/note1.txt", "out": "out/numbered.txt"}
    ran = Observation(exit_code=0, stdout="", stderr="", duration_s=0.0)
    step = StepTrace(step_id="s1", tool=spec.name, args=args, output_type=spec.returns.type,
                     command=render_command(spec, args), observation=ran)
    script = solution_script(Trace(steps=[step]))
    with provider_for(backend, RUN_ID).sandbox() as sb:
        sb.write_files(ECO.seed_state(1))
        solved = run_solution(sb, script)
    assert solved.exit_code == 3
    line = script.splitlines().index(step.command) + 1
    assert solution_failure(solved.exit_code, solved.stderr) == (
        f"line {line} (`cat -n > out/numbered.txt`) {summary}")


def test_a_sampler_raising_key_error_rejects_its_candidate_naming_it(tmp_path):
    """A KeyError in a sampler is a bug: the candidate ends as sampler_error with the
    exception in the detail, not as "no value fits" repaired away."""
    eco_dir = tmp_path / "unruly"
    shutil.copytree("tests/fixtures/ecosystems/unruly", eco_dir)
    (eco_dir / "samplers.py").write_text(
        "def word(content: bytes, rng) -> str:\n    return {}['first']\n")
    step = Step(id="s1", tool="count_word", bind={
        "note": Binding(kind="state", value="notes/n0.txt"),
        "word": Binding(kind="sample", facet="word", of="note")})
    graph = WorkflowGraph(ecosystem="unruly", shape="chain", steps=[step])
    candidate = Candidate(candidate_id="sampler-bug", index=0, ecosystem="unruly", seed=100,
                          graph=graph)
    outcome = build_candidate(candidate, str(eco_dir), LocalConfig(), RUN_ID)
    attempt = outcome.attempt
    assert (attempt.stage, attempt.reason) == ("execute", "sampler_error"), attempt.detail
    assert "KeyError: 'first'" in attempt.detail and not attempt.repairs


@pytest.mark.parametrize("tool,repaired", [("explode", False), ("hang", False),
                                           ("read_config", True), ("take_some_lines", True)])
def test_strict_rejects_a_failing_tool_instead_of_replacing_or_dropping_it(tool, repaired):
    """``--strict``: a tool that fails is neither substituted nor truncated away; repairs
    under which the tool itself then runs (a provided file, a new draw) still apply."""
    outcome = build_candidate(planted(tool), FAULTS, LocalConfig(), RUN_ID,
                              CandidateSettings(strict=True))
    if repaired:
        assert outcome.task is not None, outcome.attempt.detail
        assert outcome.task.tools == ["write_notes", tool]
    else:
        assert outcome.task is None and not outcome.attempt.repairs
        assert outcome.attempt.detail.startswith(f"s2 {tool}"), outcome.attempt.detail


def test_provided_file_is_part_of_the_environment(backend):
    outcome = build_candidate(planted("read_config"), FAULTS, backend, RUN_ID)
    trace = Trace.model_validate_json(outcome.task.trace_json)
    assert trace.environment.files == {"config/settings.ini": "[run]\nseed = 1\n"}
    assert trace.steps[1].observation.exit_code == 0
    assert outcome.attempt.sandboxes == 2  # execution, then the repaired trace's fresh gate


def test_substitute_keeps_the_failing_steps_inputs(backend):
    outcome = build_candidate(planted("explode"), FAULTS, backend, RUN_ID)
    trace = Trace.model_validate_json(outcome.task.trace_json)
    assert [s.tool for s in trace.steps] == ["write_notes", "cat_notes"]  # each tool once
    assert trace.steps[1].args["path"] == "out/copy.txt"  # still the upstream output


def test_nondeterminism_is_found_by_the_second_execution(backend):
    outcome = build_candidate(planted("coin_flip"), FAULTS, backend, RUN_ID)
    assert outcome.task is None
    assert (outcome.attempt.stage, outcome.attempt.reason) == ("validate", "nondeterministic")
    assert "s2 coin_flip" in outcome.attempt.detail


@pytest.mark.docker
def test_missing_binary_is_installed_in_a_rebuilt_image():
    """jq is not in the base image (the host may have it: this needs the docker backend)."""
    without = build_candidate(planted("quote_lines"), FAULTS, DockerConfig(), RUN_ID,
                              NO_REPAIR)
    assert without.attempt.reason == "environment"
    assert "jq: command not found" in without.attempt.detail
    outcome = build_candidate(planted("quote_lines"), FAULTS, DockerConfig(), RUN_ID)
    assert outcome.task is not None, outcome.attempt.detail
    trace = Trace.model_validate_json(outcome.task.trace_json)
    assert [r.kind for r in trace.repairs] == ["add_package"]
    assert trace.environment.packages == ["jq"]
    assert outcome.attempt.sandboxes == 3  # execution, rebuilt with jq, the gate's fresh one


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
    outcome = build_candidate(planted("hang"), FAULTS, backend, RUN_ID, NO_REPAIR)
    assert outcome.attempt.reason == "timeout"
    if backend.type == "local":
        assert _host_processes("sleep 300") == []


@pytest.mark.docker
@pytest.mark.parametrize("config", DOCKER_CONFIGS.values(), ids=DOCKER_CONFIGS.keys())
@pytest.mark.parametrize("tool", ["fork_bomb", "memory_hog"])
def test_resource_faults_are_contained_on_docker(tool, config):
    outcome = build_candidate(planted(tool), FAULTS, config, RUN_ID, NO_REPAIR)
    assert outcome.task is None and outcome.attempt.reason == "resource", outcome.attempt.detail
    assert outcome.attempt.detail.startswith(f"s2 {tool}")
    repaired = build_candidate(planted(tool), FAULTS, config, RUN_ID)
    assert repaired.task is not None and repaired.attempt.repairs[0].startswith("truncate s2 "
                                                                                 "resource")
    close_run(RUN_ID)
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"taskfactory.run={RUN_ID}"}) == []
