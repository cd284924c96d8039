"""One candidate, start to finish: seed, execute, verify, gate, render — in one sandbox
(two when a repair changed the trace: its gate runs in a fresh one).

This is the body of the per-candidate Prefect task.  It composes the stages in order and
turns any :class:`StageFailure` into a rejected attempt that names stage and reason.
Infrastructure failures (the engine, the Prefect API) are raised as
:class:`flows.infrastructure.CandidateErrored` naming the stage; other engine errors
(:class:`SandboxError`) propagate, so the orchestrator can retry either.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache

from environments.config import BackendConfig
from environments.ecosystems import Ecosystem, load_ecosystem
from environments.sandbox import Sandbox
from flows import limits
from flows.infrastructure import CandidateErrored, errored
from flows.providers import provider_for
from schemas.graph import Candidate, WorkflowGraph
from schemas.records import AttemptRow, TaskRow, TrajectoryRow
from tasks.commands import solution_script
from tasks.dataset.provenance import generator_version
from tasks.execute import execute_graph
from tasks.failures import StageFailure
from tasks.instruct import render_instruction
from tasks.llm import LLMClient, LLMConfig
from tasks.paraphrase import paraphrase_instruction
from tasks.preserve import check_items_preserved, check_preserved, required_literals
from tasks.realize import LiveEnvironment, env_digest, probe, state_digest
from tasks.reasoning import LLMReasoner
from tasks.repair import Repairer
from tasks.repair_llm import propose_repair
from tasks.trajectories import render_trajectories
from tasks.validate import run_gate
from tasks.verify import derive_checks, render_verifier


@dataclass
class Outcome:
    attempt: AttemptRow
    task: TaskRow | None = None
    trajectories: list[TrajectoryRow] = field(default_factory=list)


@cache
def llm_client() -> LLMClient | None:
    """One client per process (one budget, one breaker) when TASKFACTORY_LLM_BASE_URL and
    _MODEL are set, else None: repair, paraphrase and reasoning all go through it, under
    the server's ``llm`` rate limit (:mod:`flows.limits`)."""
    config = LLMConfig.from_env()
    return LLMClient(config, limits.llm_request) if config is not None else None


def llm_repairer() -> Repairer | None:
    """The LLM repairer when an LLM is configured, else None."""
    client = llm_client()
    if client is None:
        return None
    return lambda request: propose_repair(client, request)


@cache
def ecosystem(name_or_path: str) -> Ecosystem:
    return load_ecosystem(name_or_path)


def task_id_for(eco: Ecosystem, digest: str, graph: WorkflowGraph, instruction: str,
                verifier_py: str, solution_sh: str) -> str:
    blob = json.dumps([eco.name, eco.digest, digest, graph.model_dump(mode="json"),
                       instruction, verifier_py, solution_sh], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class _Opener:
    """Opens the candidate's sandboxes (its ecosystem's image plus any packages) and counts
    them."""

    def __init__(self, eco: Ecosystem, backend: BackendConfig, run_id: str,
                 labels: dict[str, str]) -> None:
        self.eco, self.backend, self.run_id, self.labels = eco, backend, run_id, labels
        self.opened = 0

    def __call__(self, packages: tuple[str, ...]) -> AbstractContextManager[Sandbox]:
        config = self.backend.for_ecosystem(self.eco, packages)
        self.opened += 1
        return provider_for(config, self.run_id).sandbox(labels=self.labels)


def build_candidate(candidate: Candidate, ecosystem_ref: str, backend: BackendConfig,
                    run_id: str, max_repairs: int = 2, instruction_style: str = "goal"
                    ) -> Outcome:
    """Run one candidate through every stage and return its attempt (and task, if accepted).

    ``backend`` is the base config (the ecosystem's image is derived from it).  Execution
    and the gate share one sandbox, the gate starting each control from the snapshot of
    the initial state; a repaired trace is gated in a fresh sandbox instead, realized from
    the seed plus the repairs' additions.  ``max_repairs=0`` turns
    targeted repair off (for yield comparisons).  The template instruction is rendered
    before the gate (its literals feed a shortcut control); once the gate passed, it must
    preserve every required literal.  With an LLM configured, the instruction is then
    paraphrased and the reasoning written by it, each kept only when it passes the same
    checks as the templates."""
    eco = ecosystem(ecosystem_ref)
    opener = _Opener(eco, backend, run_id, {"taskfactory.candidate": candidate.candidate_id})
    times = {"sandbox_s": 0.0, "execute_s": 0.0, "gate_s": 0.0, "render_s": 0.0}
    t_start = time.perf_counter()
    stage, task, trajectories, repairs = "sandbox", None, [], []
    status, reason, detail = "accepted", "accepted", ""
    graph = candidate.graph

    def lap(key: str, t0: float) -> float:
        now = time.perf_counter()
        times[key] += now - t0
        return now

    try:
        t = time.perf_counter()
        with LiveEnvironment(eco, candidate.seed, opener) as env:
            t = lap("sandbox_s", t)
            stage = "execute"
            trace, graph = execute_graph(env, eco, candidate, max_repairs, llm_repairer())
            repairs = [f"{r.kind} {r.step_id} {r.reason}: {r.detail}" for r in trace.repairs]
            before, after, files = env.before, probe(env.sandbox, eco), env.files
            t = lap("execute_s", t)
            stage = "verify"
            checks = derive_checks(eco, trace, before, after)
            verifier_py = render_verifier(checks, eco.probe_source,
                                          task_ref=candidate.candidate_id)
            solution_sh = solution_script(trace, eco.spec.answer_file)
            instructed = render_instruction(eco, graph, trace, candidate.seed, instruction_style)
            t = lap("render_s", t)
            stage = "validate"
            if not trace.repairs:
                gate = run_gate(env, eco, trace, checks, instructed.text, solution_sh,
                                verifier_py, after)
        if trace.repairs:  # a repaired trace runs once more where nothing was repaired
            with LiveEnvironment(eco, candidate.seed, opener, trace.environment) as fresh:
                gate = run_gate(fresh, eco, trace, checks, instructed.text, solution_sh,
                                verifier_py, after, realized=before)
        t = lap("gate_s", t)
        stage = "instruct"
        required = required_literals(eco.spec, graph, trace, checks)
        check_preserved(instructed.text, required)
        check_items_preserved(instructed.items, required, eco.spec.context)
        if (client := llm_client()) is not None:  # after the gate: the sandboxes are closed
            instructed = paraphrase_instruction(client, instructed, required)
        instruction = instructed.text
        stage = "trajectories"
        digest = env_digest(files, trace.environment)
        task_id = task_id_for(eco, digest, graph, instruction, verifier_py, solution_sh)
        reasoner = LLMReasoner(client) if client is not None else None
        trajectories = render_trajectories(
            eco, graph, task_id, run_id, instructed, trace, candidate.seed, reasoner,
            rendering=f"llm:{reasoner.model}" if reasoner else "template")
        now = datetime.now(UTC)
        task = TaskRow(
            task_id=task_id, run_id=run_id, candidate_id=candidate.candidate_id,
            ecosystem=eco.name, ecosystem_version=f"{eco.spec.version}+{eco.digest}",
            seed=candidate.seed, shape=graph.shape, depth=graph.depth, n_steps=len(graph.steps),
            fingerprint=graph.fingerprint(), tools=[s.tool for s in graph.steps],
            instruction=instruction, instruction_style=instructed.style,
            template_id=instructed.template_id, instruction_literals=list(required.spans),
            answer=trace.answer, solution_sh=solution_sh,
            verifier_py=verifier_py, checks_json=json.dumps([c.model_dump() for c in checks]),
            graph_json=graph.model_dump_json(), trace_json=trace.model_dump_json(),
            env_digest=digest, initial_state_sha256=state_digest(before),
            image=getattr(backend, "image", "local"), backend=backend.type,
            gate=gate, generator_version=generator_version(), created_at=now)
        lap("render_s", t)
        stage = "accepted"
    except StageFailure as failure:
        status, stage, reason, detail = "rejected", failure.stage, failure.reason, failure.detail
    except Exception as exc:
        failure = errored(stage, exc)
        if failure is None:
            raise
        raise failure from exc
    attempt = AttemptRow(
        candidate_id=candidate.candidate_id, run_id=run_id, index=candidate.index,
        ecosystem=eco.name, seed=candidate.seed, shape=graph.shape, depth=graph.depth,
        fingerprint=graph.fingerprint(), status=status, stage=stage, reason=reason,
        detail=detail[:500], task_id=task.task_id if task else None, backend=backend.type,
        repairs=repairs, sandboxes=opener.opened, total_s=time.perf_counter() - t_start,
        created_at=datetime.now(UTC), **times)
    return Outcome(attempt=attempt, task=task, trajectories=trajectories)


def engine_failure(candidate: Candidate, eco_name: str, backend_type: str, run_id: str,
                   exc: BaseException) -> Outcome:
    """The attempt of a candidate whose sandbox kept failing after retries: ``errored``
    (stage and reason of the infrastructure failure) when the infrastructure failed,
    else rejected at stage ``sandbox``."""
    graph = candidate.graph
    failure = errored("sandbox", exc)
    if isinstance(failure, CandidateErrored):
        status, stage, reason, detail = "errored", failure.stage, failure.reason, failure.detail
    else:
        status, stage, reason = "rejected", "sandbox", "sandbox"
        detail = f"{type(exc).__name__}: {exc}"
    return Outcome(attempt=AttemptRow(
        candidate_id=candidate.candidate_id, run_id=run_id, index=candidate.index,
        ecosystem=eco_name, seed=candidate.seed, shape=graph.shape, depth=graph.depth,
        fingerprint=graph.fingerprint(), status=status, stage=stage, reason=reason,
        detail=detail[:500], task_id=None, backend=backend_type,
        repairs=[], sandboxes=0, sandbox_s=0.0, execute_s=0.0, gate_s=0.0, render_s=0.0,
        total_s=0.0,
        created_at=datetime.now(UTC)))
