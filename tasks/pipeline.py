"""The pipeline: one candidate through its declared stages, in the one order they run.

Each stage (:class:`tasks.stages.context.Stage`) declares the fields of the candidate
context it ``needs`` and ``gives``.  A :class:`Pipeline` is checked when it is built:
every field a stage needs must be an input of the context or given by an earlier stage,
and the stages together must give the outcome's task and trajectories;
:class:`PipelineError` names the stage and the field otherwise.  :data:`PIPELINE` is the
factory's stage order, the only one.  Adding a stage is one module under ``tasks/stages/``,
one entry in :data:`PIPELINE` and its name in ``StageName`` (the attempts record it).

:meth:`Pipeline.run` is the loop: it runs each stage, times it, and turns a
:class:`tasks.core.failures.StageFailure` into a rejected attempt naming the failure's stage and
reason.  Any other exception propagates with ``ctx.stage`` naming the stage that was
running (the wiring tells infrastructure failures apart from there).  However a candidate
ends, the loop closes the sandboxes the context holds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import get_args

from schemas.graph import Candidate, WorkflowGraph
from schemas.records import AttemptRow, AttemptStatus, StageName, TaskRow, TrajectoryRow
from schemas.trace import Trace
from tasks.core.failures import StageFailure
from tasks.stages.cases import Cases
from tasks.stages.context import FIELDS, INPUTS, PHASES, CandidateContext, Phase, Stage
from tasks.stages.describe import Describe
from tasks.stages.draft import Draft
from tasks.stages.execute import Execute
from tasks.stages.instruct import Instruct
from tasks.stages.sandbox import OpenEnvironment
from tasks.stages.trajectories import Trajectories
from tasks.stages.validate import Validate
from tasks.stages.verify import Verify

STAGE_NAMES = frozenset(get_args(StageName))
RESULT = ("task", "trajectories")
"""What the stages must give for an accepted outcome."""


class PipelineError(TypeError):
    """Stages that do not fit together (when the pipeline is built), or a stage that did
    not give what it declares (when it runs)."""


@dataclass
class Outcome:
    attempt: AttemptRow
    task: TaskRow | None = None
    trajectories: list[TrajectoryRow] = field(default_factory=list)


class Pipeline:
    """Stages in order, checked against each other when built."""

    def __init__(self, *stages: Stage) -> None:
        have, names = set(INPUTS), set()
        for stage in stages:
            if stage.name not in STAGE_NAMES:
                raise PipelineError(f"stage {stage.name!r}: the name is not a StageName; add "
                                    "it to schemas.records.StageName (attempts record it)")
            if stage.name in names:
                raise PipelineError(f"stage {stage.name!r} appears twice in the pipeline")
            names.add(stage.name)
            unknown = [f for f in (*stage.needs, *stage.gives) if f not in FIELDS]
            if unknown:
                raise PipelineError(
                    f"stage {stage.name!r} declares {', '.join(unknown)}, which the candidate "
                    "context does not have; add the field to tasks.stages.context.CandidateContext")
            missing = [f for f in stage.needs if f not in have]
            if missing:
                raise PipelineError(
                    f"stage {stage.name!r} needs {', '.join(missing)}, which neither the "
                    f"inputs nor an earlier stage give; put a stage that gives it before it")
            have.update(stage.gives)
        missing = [f for f in RESULT if f not in have]
        if missing:
            raise PipelineError(f"no stage gives {', '.join(missing)}, which an accepted "
                                "candidate's outcome holds")
        self.stages = stages

    @property
    def names(self) -> tuple[StageName, ...]:
        return tuple(stage.name for stage in self.stages)

    def run(self, ctx: CandidateContext) -> Outcome:
        """Every stage in order: the candidate's outcome, accepted or rejected."""
        times = dict.fromkeys(PHASES, 0.0)
        t_start = time.perf_counter()
        status: AttemptStatus
        try:
            with ctx.sandboxes:
                for stage in self.stages:
                    ctx.stage = stage.name
                    t = time.perf_counter()
                    try:
                        stage.run(ctx)
                    finally:
                        times[stage.phase] += time.perf_counter() - t
                    missing = [f for f in stage.gives if not hasattr(ctx, f)]
                    if missing:
                        raise PipelineError(f"stage {stage.name!r} did not give "
                                            f"{', '.join(missing)}")
            ctx.stage = "accepted"
            status, reason, detail = "accepted", "accepted", ""
        except StageFailure as failure:
            status, ctx.stage, reason, detail = ("rejected", failure.stage, failure.reason,
                                                 failure.detail)
        accepted = status == "accepted"
        attempt = attempt_row(
            ctx.candidate, ctx.graph, Where(ctx.run_id, ctx.eco.name, ctx.backend),
            Verdict(status, ctx.stage, reason, detail,
                    ctx.task.task_id if accepted else None),
            getattr(ctx, "trace", None),
            Cost(ctx.opened, times, time.perf_counter() - t_start))
        return Outcome(attempt, ctx.task if accepted else None,
                       ctx.trajectories if accepted else [])


PIPELINE = Pipeline(OpenEnvironment(), Execute(), Cases(), Verify(), Describe(), Draft(),
                    Validate(), Instruct(), Trajectories())
"""The factory's stages, in the order they run."""


@dataclass(frozen=True)
class Where:
    """Where a candidate ran: its run, ecosystem and backend, as its attempt records them."""

    run_id: str
    ecosystem: str
    backend: str


@dataclass(frozen=True)
class Verdict:
    """How a candidate ended: its status, the stage and reason, and its task when accepted."""

    status: AttemptStatus
    stage: StageName
    reason: str
    detail: str
    task_id: str | None = None


@dataclass(frozen=True)
class Cost:
    """What a candidate's attempt took: sandboxes opened, seconds per phase and in all."""

    sandboxes: int = 0
    times: Mapping[Phase, float] | None = None
    total_s: float = 0.0


def attempt_row(candidate: Candidate, graph: WorkflowGraph, where: Where, verdict: Verdict,
                trace: Trace | None = None, cost: Cost = Cost()) -> AttemptRow:
    """The attempt row of a candidate (``graph``: as executed, when it was)."""
    t = cost.times or dict.fromkeys(PHASES, 0.0)
    return AttemptRow(
        candidate_id=candidate.candidate_id, run_id=where.run_id, index=candidate.index,
        ecosystem=where.ecosystem, seed=candidate.seed, kind=candidate.graph.kind,
        scenario=candidate.graph.scenario, tier=candidate.tier, shape=graph.shape,
        depth=graph.depth,
        fingerprint=graph.fingerprint(), status=verdict.status, stage=verdict.stage,
        reason=verdict.reason, detail=verdict.detail[:500], task_id=verdict.task_id,
        backend=where.backend,
        repairs=[f"{r.kind} {r.step_id} {r.reason}: {r.detail}"
                 for r in (trace.repairs if trace else [])],
        tools=[step.tool for step in candidate.graph.steps],
        graph_json=candidate.graph.model_dump_json(),
        sandboxes=cost.sandboxes, sandbox_s=t["sandbox_s"], execute_s=t["execute_s"],
        gate_s=t["gate_s"], render_s=t["render_s"], total_s=cost.total_s,
        created_at=datetime.now(UTC))
