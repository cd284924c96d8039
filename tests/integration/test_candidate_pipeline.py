"""One candidate through every stage in a real sandbox, on both backends."""

import json
import os

import pytest

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.candidate import build_candidate, ecosystem
from flows.providers import close_run, provider_for
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.pipeline import PIPELINE, Pipeline
from tasks.plan.planner import plan_candidates
from tasks.rules.compose import render_phrase
from tasks.stages import verify as verify_stage
from tasks.verify.verifier import run_verifier

RUN_ID = f"itest-pipeline-{os.getpid()}"  # unique: other checkouts may share the engine
ECO = ecosystem("files")
CANDIDATES, _ = plan_candidates(ECO, 12, run_seed=11)


@pytest.fixture(scope="module", params=[
    pytest.param(LocalConfig(), id="local"),
    pytest.param(DockerConfig(), id="docker", marks=pytest.mark.docker),
])
def backend(request):
    yield request.param
    close_run(RUN_ID)


def test_candidates_are_accepted_with_gate_results(backend):
    outcomes = [build_candidate(c, "files", backend, RUN_ID) for c in CANDIDATES]
    accepted = [o for o in outcomes if o.task]
    assert len(accepted) >= 10, [(o.attempt.stage, o.attempt.reason, o.attempt.detail)
                                 for o in outcomes if not o.task]
    for o in accepted:
        t = o.task
        assert t.gate.baseline_reward == 0.0 and t.gate.reference_reward == 1.0
        assert t.gate.reference_checks_passed == t.gate.checks_total > 0
        assert o.attempt.status == "accepted" and o.attempt.task_id == t.task_id
        # one sandbox for execution and the gate; a repaired trace is gated in a fresh one
        assert o.attempt.sandboxes == (2 if o.attempt.repairs else 1), o.attempt.repairs
        assert {(r.action_space, r.supervision) for r in o.trajectories} == {
            (a, s) for a in ("function", "terminal") for s in ("masked", "full", "actobs")}
        assert all(r.task_id == t.task_id for r in o.trajectories)
        checks = [Check(**c) for c in json.loads(t.checks_json)]
        trace = Trace.model_validate_json(t.trace_json)
        resolved = {d.observation.stdout.strip(): d.args
                    for st in trace.steps for d in st.discoveries
                    if d.name in {x.name for x in ecosystem(t.ecosystem).spec.describers}}
        # every checked output is named, described, or named by the lookup that finds it
        # (a fix task's broken file) in the instruction; the entries it keeps unchanged
        # are promised by its closer
        looked_up = _looked_up(t, trace)
        for c in (c for c in checks if c.kind != "unchanged"):
            named = ([looked_up[c.key]] if c.key in looked_up else
                     [f"`{v}`" for v in resolved.get(c.key, {}).values()] or [f"`{c.key}`"])
            assert all(n in t.instruction for n in named), (c.key, t.instruction)
    for o in outcomes:
        if not o.task:
            assert o.attempt.status == "rejected" and o.attempt.reason and o.attempt.detail


def _looked_up(task, trace: Trace) -> dict[str, str]:
    """Entry -> the label of the lookup whose printed value named it (a write's target
    bound to a read step)."""
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    by_id = {st.step_id: st for st in trace.steps}
    out = {}
    for step in graph.steps:
        tool = ECO.spec.tool(step.tool)
        target = step.bind.get(str(tool.returns.from_param))
        if tool.effect != "write" or target is None or target.kind != "step":
            continue
        up = by_id[target.step]
        label = ECO.spec.tool(up.tool).returns.label
        if ECO.spec.tool(up.tool).effect == "read" and label:
            out[by_id[step.id].args[str(tool.returns.from_param)]] = render_phrase(label, up.args)
    return out


def test_task_verifier_and_solution_agree_in_a_fresh_sandbox(backend):
    outcome = next(o for o in (build_candidate(c, "files", backend, RUN_ID) for c in CANDIDATES)
                   if o.task)
    task = outcome.task
    with provider_for(backend, RUN_ID).sandbox() as sb:
        sb.write_files(ECO.seed_state(task.seed, task.fault))
        assert run_verifier(sb, task.verifier_py).reward == 0
        solved = sb.exec(["bash", "-s"], stdin=task.solution_sh.encode(),
                         env={"TASKFACTORY_WORKDIR": sb.workdir})
        assert solved.exit_code == 0, solved.stderr
        assert run_verifier(sb, task.verifier_py).reward == 1


def test_task_ids_are_content_addressed(backend):
    a = build_candidate(CANDIDATES[0], "files", backend, RUN_ID)
    b = build_candidate(CANDIDATES[0], "files", backend, "another-run")
    close_run("another-run")
    assert a.task and b.task and a.task.task_id == b.task.task_id


@pytest.mark.parametrize("breakage,reason", [
    ("passes_on_baseline", "baseline_passed"),
    ("wrong_expectation", "reference_failed"),
])
def test_gate_rejects_a_broken_verifier(backend, monkeypatch, breakage, reason):
    real = verify_stage.derive_checks

    def broken(eco, trace, before, after):
        checks = real(eco, trace, before, after)
        if breakage == "passes_on_baseline":  # asserts a seeded file that nothing changes
            path = next(p for p in sorted(before["files"]) if p.endswith(".csv"))
            return [Check(kind="state", section="files", key=path, compare="text",
                          expected=before["files"][path])]
        return [*checks, Check(kind="answer", key="answer.txt", expected="not-the-answer")]

    monkeypatch.setattr(verify_stage, "derive_checks", broken)
    outcome = build_candidate(CANDIDATES[0], "files", backend, RUN_ID)
    assert outcome.task is None
    assert (outcome.attempt.stage, outcome.attempt.reason) == ("validate", reason)


class CountSteps:
    """A trivial extra stage (in the factory it would be one module of ``tasks/stages/``):
    reads the trace, gives nothing, records that it ran."""

    name = "realize"  # a stage name the factory's pipeline does not use
    phase = "render_s"
    needs = ("trace",)
    gives = ()

    def __init__(self, refuse: bool = False) -> None:
        self.refuse, self.seen = refuse, []

    def run(self, ctx):
        self.seen.append(len(ctx.trace.steps))
        if self.refuse:
            raise StageFailure("realize", "degenerate", "refused by the extra stage")


def _with(extra, before: str) -> Pipeline:
    stages = list(PIPELINE.stages)
    stages.insert(PIPELINE.names.index(before), extra)
    return Pipeline(*stages)


def test_an_extra_stage_is_one_entry_in_the_pipeline_and_runs(backend):
    extra = CountSteps()
    outcome = build_candidate(CANDIDATES[0], "files", backend, RUN_ID,
                              pipeline=_with(extra, before="verify"))
    assert outcome.task is not None and outcome.attempt.status == "accepted"
    assert extra.seen == [outcome.task.n_steps]


def test_an_extra_stage_that_rejects_gives_a_rejected_attempt_and_closes_the_sandbox(backend):
    import docker

    extra = CountSteps(refuse=True)
    candidate = CANDIDATES[0]
    outcome = build_candidate(candidate, "files", backend, RUN_ID,
                              pipeline=_with(extra, before="validate"))
    a = outcome.attempt
    assert (a.status, a.stage, a.reason, a.detail) == (
        "rejected", "realize", "degenerate", "refused by the extra stage")
    assert outcome.task is None and not outcome.trajectories and a.sandboxes == 1
    assert a.execute_s > 0 and a.gate_s == 0
    # a rejected candidate can be inspected: its graph and tools are on the attempt
    assert WorkflowGraph.model_validate_json(a.graph_json or "") == candidate.graph
    assert a.tools == [step.tool for step in candidate.graph.steps]
    if isinstance(backend, DockerConfig):
        client = docker.from_env()
        label = f"taskfactory.candidate={candidate.candidate_id}"
        for kept in client.containers.list(all=True, filters={"label": label}):
            # kept for the next sandbox (DockerConfig.reuse): then it was reset
            leftovers = kept.exec_run(["find", "/workspace", "/tmp", "-mindepth", "1",
                                       "-not", "-path", "/tmp/.tf-snap"], user="1000")
            assert leftovers.output == b""


def _gated(candidate, backend, style):
    """The candidate's context after the gate (the stages before ``instruct``), or None
    when an earlier stage rejected it."""
    from flows.candidate import sandbox_opener
    from tasks.dataset.provenance import generator_version
    from tasks.stages.context import CandidateContext
    from tasks.stages.settings import CandidateSettings

    ctx = CandidateContext(
        candidate=candidate, graph=candidate.graph, eco=ECO, run_id=RUN_ID,
        open_sandbox=sandbox_opener(ECO, backend, RUN_ID, candidate), backend=backend.type,
        image=getattr(backend, "image", "local"), generator_version=generator_version(),
        settings=CandidateSettings(instruction_style=style))
    upto = PIPELINE.names.index("instruct")
    with ctx.sandboxes:
        try:
            for stage in PIPELINE.stages[:upto]:
                stage.run(ctx)
        except StageFailure:
            return None
    return ctx


def test_goal_tasks_neither_require_nor_penalise_intermediate_results(backend):
    """A goal-style task passes its verifier when its intermediate file is made under
    another name and removed before the verifier runs; its checks never name it."""
    from tasks.rules.deliverables import flow

    tried = 0
    for candidate in CANDIDATES:
        ctx = _gated(candidate, backend, "goal")
        if ctx is None:
            continue
        steps = flow(ECO.spec, ctx.graph, ctx.trace)
        if not steps.intermediate_keys:
            continue
        tried += 1
        assert not steps.intermediate_keys & {c.key for c in ctx.checks}
        assert ctx.gate.passed and ctx.gate.reference_reward == 1.0
        solve, scratch = ctx.solution_sh, []
        for key in sorted(steps.intermediate_keys):
            assert f"`{key}`" not in ctx.draft.text
            other = key.replace(".", "_elsewhere.", 1)
            solve = solve.replace(key, other)
            scratch.append(other)
        solve += "rm -f " + " ".join(scratch) + "\n"
        with provider_for(backend, RUN_ID).sandbox() as sb:
            sb.write_files(ECO.seed_state(candidate.seed, candidate.graph.fault))
            done = sb.exec(["bash", "-s"], stdin=solve.encode(),
                           env={"TASKFACTORY_WORKDIR": sb.workdir})
            assert done.exit_code == 0, done.stderr
            for key in steps.intermediate_keys:  # never made under its own name
                assert sb.exec(["test", "-e", key]).exit_code != 0
            assert run_verifier(sb, ctx.verifier_py).reward == 1
        spec = _gated(candidate, backend, "spec")  # spec still checks the intermediates
        assert spec is not None
        assert steps.intermediate_keys <= {c.key for c in spec.checks}
        if tried == 2:
            return
    assert tried, "no candidate with an intermediate result passed the gate"
