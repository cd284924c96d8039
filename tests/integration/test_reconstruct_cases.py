"""A reconstruct task's cases in Docker: an argument sampled from what an earlier step
wrote is drawn on each case from that case's own output, and a derived seed the program
fails on is skipped for the next one."""

import hashlib
import io
import json
import os
import shlex
import tarfile

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from tasks.plan.planner import plan_candidates
from tasks.reconstruct.arguments import program_arguments, reads_initial
from tasks.reconstruct.cases import Reconstruction, run_cases
from tasks.reconstruct.program import reference_program

pytestmark = pytest.mark.docker

RUN_ID = f"itest-reconstruct-cases-{os.getpid()}"


@pytest.fixture(scope="module")
def built():
    """An accepted files task whose grep pattern is sampled from a file an earlier step
    wrote (files, run seed 6: sort_unique, head_lines, grep_lines)."""
    eco = ecosystem("files")
    planned, _ = plan_candidates(eco, 12, run_seed=6, kinds={"reconstruct": 1})
    candidate = planned[5]
    assert [s.tool for s in candidate.graph.steps] == ["sort_unique", "head_lines",
                                                       "grep_lines"]
    outcome = build_candidate(candidate, "files", DockerConfig(), RUN_ID)
    yield eco, outcome
    close_run(RUN_ID)


def _expected_file(tar: bytes, path: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:gz") as archive:
        member = archive.extractfile(f"./{path}")
        assert member is not None
        return member.read()


def test_an_argument_sampled_from_an_earlier_steps_output_is_drawn_from_each_cases(built):
    eco, outcome = built
    task = outcome.task
    assert task is not None, (outcome.attempt.stage, outcome.attempt.reason,
                              outcome.attempt.detail)
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    trace = Trace.model_validate_json(task.trace_json)
    arguments = program_arguments(eco, graph)
    late = [a for a in arguments
            if a.param == "pattern" and not reads_initial(eco, graph, trace, a)]
    assert late
    grep = next(st for st in trace.steps if st.step_id == late[0].step_id)
    read = grep.args[eco.spec.tool(grep.tool).param("pattern").sample.of]
    program = reference_program(eco, graph, trace)
    with provider_for(DockerConfig().for_ecosystem(eco), RUN_ID).sandbox() as sb:
        cases = run_cases(Reconstruction(sb, eco, graph, trace, program), task.seed)
    assert [c.args for c in cases] == [c["args"] for c in json.loads(task.cases_json)]
    at = arguments.index(late[0])
    for case in (c for c in cases if c.public):  # each value is in that case's own file
        assert case.args[at].encode() in _expected_file(case.expected_tar, read)
    assert len({c.args[at] for c in cases}) > 1  # not the candidate's value everywhere


def test_a_derived_seed_the_program_fails_on_is_skipped_for_the_next(built):
    eco, outcome = built
    task = outcome.task
    assert task is not None
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    trace = Trace.model_validate_json(task.trace_json)
    program = reference_program(eco, graph, trace)
    config = DockerConfig().for_ecosystem(eco)
    with provider_for(config, RUN_ID).sandbox() as sb:
        cases = run_cases(Reconstruction(sb, eco, graph, trace, program), task.seed)
        # the same program, failing on the second derived seed's input only
        path, data = sorted(cases[2].files.items())[0]
        assert all(c.files.get(path) != data for c in cases if c is not cases[2])
        digest = hashlib.md5(data).hexdigest()
        guard = f'[ "$(md5sum < {shlex.quote(path)} | cut -c1-32)" != {digest} ] || exit 3'
        lines = program.splitlines()
        enter = next(i for i, ln in enumerate(lines) if ln.startswith('cd "${1'))
        failing = "\n".join([*lines[:enter + 1], guard, *lines[enter + 1:]]) + "\n"
        skipped = run_cases(Reconstruction(sb, eco, graph, trace, failing), task.seed)
    assert cases[2].seed not in [c.seed for c in skipped]
    kept = [c for c in cases if c.seed != cases[2].seed]
    assert [c.seed for c in skipped][:len(kept)] == [c.seed for c in kept]
    assert len(skipped) == len(cases)
    assert [c.args for c in skipped][:2] == [c.args for c in cases][:2]
