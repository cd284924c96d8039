"""The open-loop control on the real engine: the reference solution run with every
argument the instruction does not write replaced by a wrong value drawn from the seeded
state.  A ``service`` task whose instruction names its ticket scores 1 (nothing to
observe); the same task with the ticket's id left out of the instruction, so that a
solver would have to look it up, scores 0."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from environments.docker.config import DockerConfig
from flows.candidate import build_candidate, ecosystem, sandbox_opener
from flows.providers import close_run
from schemas.trace import Observation, StepTrace, Trace
from schemas.verifier import Check, GateResult
from tasks.execute.realize import LiveEnvironment, probe
from tasks.gate.gate import run_gate, run_solution
from tasks.gate.open_loop import open_loop_script
from tasks.plan.planner import plan_candidates
from tasks.stages.settings import CandidateSettings
from tests.support.dataset import write_outcomes

pytestmark = pytest.mark.docker
RUN = f"itest-open-loop-{os.getpid()}"


def _ticket_write(trace: Trace) -> str | None:
    """The id of a sampled existing ticket a write step of ``trace`` changes, if any."""
    spec = ecosystem("service").spec
    for st in trace.steps:
        tool = spec.tool(st.tool)
        sampled = any(p.name == "ticket" and p.sample for p in tool.params)
        if tool.effect == "write" and not tool.creates and sampled \
                and tool.returns.from_param == "ticket":
            return st.args["ticket"]
    return None


@pytest.fixture(scope="module")
def accepted():
    """An accepted ``service`` task that changes a sampled ticket, its candidate and id, in
    the ``spec`` style (the goal style names the ticket by its title, see
    ``test_describers.py``)."""
    candidates, _ = plan_candidates(ecosystem("service"), 12, 7, {1: 1.0})
    try:
        for candidate in candidates:
            spec = CandidateSettings(instruction_style="spec")  # names every ticket
            outcome = build_candidate(candidate, "service", DockerConfig(), RUN, spec)
            row = outcome.task
            if row is not None and (ticket := _ticket_write(Trace.model_validate_json(
                    row.trace_json))):
                yield candidate, row, ticket, outcome
                return
        pytest.fail("no accepted service task changes a sampled ticket")
    finally:
        close_run(RUN)


def _gate(candidate, row, instruction: str) -> GateResult:
    """The gate over ``row`` with ``instruction``, in a fresh sandbox of its environment."""
    eco, trace = ecosystem("service"), Trace.model_validate_json(row.trace_json)
    checks = [Check.model_validate(c) for c in json.loads(row.checks_json)]
    opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
    with LiveEnvironment(eco, row.seed, opener, trace.environment, row.fault) as env:
        assert run_solution(env.sandbox, row.solution_sh).exit_code == 0
        after = probe(env.sandbox, eco)
        return run_gate(env, eco, trace, checks, instruction, row.solution_sh,
                        row.verifier_py, after)


def test_a_task_whose_instruction_writes_every_value_scores_1(accepted):
    candidate, row, *_ = accepted
    assert row.gate.open_loop_reward == 1.0 and row.needs_observation is False
    trace = Trace.model_validate_json(row.trace_json)
    assert open_loop_script(ecosystem("service"), trace, row.instruction, row.seed, {}, {}) \
        is None  # every argument written: the open-loop solution is the reference


def test_a_task_that_needs_a_looked_up_id_scores_0(accepted):
    candidate, row, ticket, _ = accepted
    unnamed = row.instruction.replace(f"`{ticket}`", "the ticket in question")
    assert unnamed != row.instruction
    gate = _gate(candidate, row, unnamed)
    assert gate.reference_reward == 1.0
    assert gate.open_loop_reward == 0.0 and gate.needs_observation is True
    named = _gate(candidate, row, row.instruction)
    assert named.open_loop_reward == 1.0 and named.needs_observation is False


def test_the_wrong_id_is_another_ticket_of_the_seeded_state(accepted):
    candidate, row, ticket, _ = accepted
    eco, trace = ecosystem("service"), Trace.model_validate_json(row.trace_json)
    opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
    with LiveEnvironment(eco, row.seed, opener, trace.environment, row.fault) as env:
        state = env.before
    unnamed = row.instruction.replace(f"`{ticket}`", "the ticket in question")
    script = open_loop_script(eco, trace, unnamed, row.seed, state, {})
    assert script is not None and script != row.solution_sh
    changed = [line for line in script.splitlines() if line not in row.solution_sh]
    assert changed, script
    # the ticket's route: /tickets/<id>, then a sub-route or the end of the URL
    guessed = {t for t in state["tickets"]
               if any(re.search(rf"/tickets/{t}(?![0-9])", ln) for ln in changed)}
    assert len(guessed) == 1 and ticket not in guessed, (ticket, changed)


def test_a_run_requiring_observation_rejects_a_task_solvable_open_loop(accepted):
    candidate, row, *_ = accepted
    outcome = build_candidate(candidate, "service", DockerConfig(), RUN, CandidateSettings(
        instruction_style="spec", require_observation=True))
    a = outcome.attempt
    assert outcome.task is None and outcome.trajectories == []
    assert (a.status, a.stage, a.reason) == ("rejected", "validate", "no_observation_needed")
    assert "open-loop solution scores 1.0" in a.detail


def test_stats_reports_the_share_that_needs_observation(accepted, tmp_path):
    """Over real shards: an older dataset's tasks (not measured), the accepted task, and
    the same task gated with its ticket left out of the instruction."""
    candidate, row, ticket, outcome = accepted
    unnamed = row.instruction.replace(f"`{ticket}`", "the ticket in question")
    gate = _gate(candidate, row, unnamed)
    other = row.model_copy(update={"task_id": row.task_id[:-1] + "x", "instruction": unnamed,
                                   "gate": gate, "needs_observation": gate.needs_observation})
    data = tmp_path / "data"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "datasets" / "v1", data)
    write_outcomes(data, "open-loop-run", [
        outcome, type(outcome)(attempt=outcome.attempt.model_copy(
            update={"candidate_id": "open-loop-unnamed", "task_id": other.task_id}),
            task=other)])
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "stats", "--data", str(data)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout.split("## Observation needed, per ecosystem")[1].split("##")[0]
    assert "| files | 6 | 0 | 0 |  |  |" in section  # the older dataset: not measured
    assert "| service | 2 | 2 | 1 | 50 | 0.5 |" in section
    assert "| all | 8 | 2 | 1 | 50 | 0.5 |" in section


def test_a_looked_up_id_is_guessed_as_another_ticket_even_without_a_sampler(accepted):
    """A parameter with no sampler of its own (``ticket_field``'s ticket, which only a
    lookup or an earlier step fills) is guessed with another parameter's ticket sampler."""
    candidate, row, _, _ = accepted
    eco = ecosystem("service")
    assert eco.spec.tool("ticket_field").param("ticket").sample is None
    opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
    with LiveEnvironment(eco, row.seed, opener, fault=row.fault) as env:
        state = env.before
    ticket = sorted(state["tickets"], key=int)[0]
    trace = Trace(steps=[StepTrace(
        step_id="s1", tool="ticket_field", args={"ticket": ticket, "field": "title"},
        command="", observation=Observation(exit_code=0, stdout="x\n", stderr="", duration_s=0.1),
        output="x", output_type="text")], answer="x")
    script = open_loop_script(eco, trace, "Write the `title` of the ticket in question.",
                              row.seed, state, {})
    assert script is not None
    guessed = {t for t in state["tickets"] if f"/tickets/{t}" in script}
    assert len(guessed) == 1 and ticket not in guessed, script
