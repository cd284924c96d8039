"""Stage ``trajectories``: the task's content-addressed id, its SFT trajectories (both
action spaces, every supervision mode) and its row."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.records import StageName, TaskRow
from tasks.execute.realize import env_digest, state_digest
from tasks.reconstruct.program import reference_program
from tasks.reconstruct.trajectories import render_reconstruct_trajectories
from tasks.stages.context import CandidateContext, Phase
from tasks.trajectories.reasoning import LLMReasoner, Walk
from tasks.trajectories.render import render_trajectories


def task_id_for(eco: Ecosystem, digest: str, graph: WorkflowGraph, instruction: str,
                verifier_py: str, solution_sh: str) -> str:
    """The task's id: a hash of everything that makes the task what it is."""
    blob = json.dumps([eco.name, eco.digest, digest, graph.model_dump(mode="json"),
                       instruction, verifier_py, solution_sh], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class Trajectories:
    """With an LLM, its reasoning is kept where it passes the template's checks.  A
    reconstruct task's trajectories are the agent's work on the examples (inspecting them,
    writing and testing the program: :mod:`tasks.reconstruct.trajectories`), run in a
    fresh sandbox of the ecosystem, closed when they are rendered."""

    name: StageName = "trajectories"
    phase: Phase = "render_s"
    needs: tuple[str, ...] = (
        "eco", "env", "candidate", "graph", "trace", "before", "checks", "verifier_py",
        "solution_sh", "gate", "required", "instruction", "llm", "run_id", "backend", "image",
        "generator_version", "cases", "open_sandbox")
    gives: tuple[str, ...] = ("task", "trajectories")

    def run(self, ctx: CandidateContext) -> None:
        digest = env_digest(ctx.env.files, ctx.trace.environment)
        task_id = task_id_for(ctx.eco, digest, ctx.graph, ctx.instruction.text,
                              ctx.verifier_py, ctx.solution_sh)
        reasoner = LLMReasoner(ctx.llm) if ctx.llm is not None else None
        if ctx.cases is not None:
            with ctx.open(tuple(ctx.trace.environment.packages)) as sandbox:
                ctx.trajectories = render_reconstruct_trajectories(
                    sandbox, task_id, ctx.run_id, ctx.instruction.text, ctx.trace,
                    ctx.cases, reference_program(ctx.eco, ctx.graph, ctx.trace))
        else:
            ctx.trajectories = render_trajectories(
                Walk(ctx.eco, ctx.graph, ctx.trace, ctx.candidate.seed), task_id, ctx.run_id,
                ctx.instruction, reasoner,
                rendering=f"llm:{reasoner.model}" if reasoner else "template")
        ctx.task = task_row(ctx, task_id, digest)


def task_row(ctx: CandidateContext, task_id: str, digest: str) -> TaskRow:
    """The accepted task's row."""
    eco, graph, trace, instruction = ctx.eco, ctx.graph, ctx.trace, ctx.instruction
    cases = ctx.cases
    return TaskRow(
        task_id=task_id, run_id=ctx.run_id, candidate_id=ctx.candidate.candidate_id,
        ecosystem=eco.name, ecosystem_version=f"{eco.spec.version}+{eco.digest}",
        seed=ctx.candidate.seed, shape=graph.shape, depth=graph.depth,
        n_steps=len(graph.steps), fingerprint=graph.fingerprint(),
        tools=[s.tool for s in graph.steps], instruction=instruction.text,
        instruction_style=instruction.style, template_id=instruction.template_id,
        instruction_literals=list(ctx.required.spans), answer=trace.answer,
        solution_sh=ctx.solution_sh, verifier_py=ctx.verifier_py,
        checks_json=json.dumps([c.model_dump() for c in ctx.checks]),
        graph_json=graph.model_dump_json(), trace_json=trace.model_dump_json(),
        env_digest=digest, initial_state_sha256=state_digest(ctx.before), kind=graph.kind,
        public_cases=sum(c.public for c in cases) if cases is not None else None,
        hidden_cases=sum(not c.public for c in cases) if cases is not None else None,
        cases_json=json.dumps([c.ref() for c in cases]) if cases is not None else None,
        fault=graph.fault, scenario=graph.scenario, image=ctx.image,
        crosses=eco.crosses(s.tool for s in graph.steps) if eco.members else None,
        tier=ctx.candidate.tier,
        backend=ctx.backend, gate=ctx.gate, needs_observation=ctx.gate.needs_observation,
        generator_version=ctx.generator_version,
        created_at=datetime.now(UTC))
