"""The factory flow: plan candidates, run one Prefect task per candidate, write shards.

Wiring only — what runs, in what order, with what concurrency.  The stages live in
``tasks/``; the per-candidate pipeline in :mod:`flows.candidate`.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.runtime import flow_run
from pydantic import BaseModel

from environments.config import resolve_backend
from environments.sandbox import SandboxError
from flows.candidate import Outcome, backend_for, build_candidate, ecosystem, engine_failure
from flows.progress import Progress
from flows.provenance import new_run_id
from flows.providers import close_run, provider_for
from flows.runners import make_task_runner, runner_from_env
from flows.settings import RunSettings
from schemas.graph import Candidate
from tasks.plan import plan_candidates
from tasks.publish import ShardWriter


class EcosystemYield(BaseModel):
    candidates: int = 0
    accepted: int = 0
    accepted_without_repair: int = 0
    """Accepted with no repair applied: the yield the same candidates have with repair off."""
    rejected: dict[str, int] = {}


class RunSummary(BaseModel):
    run_id: str
    backend: str
    candidates: int
    accepted: int
    accepted_without_repair: int
    rejected: dict[str, int]
    ecosystems: dict[str, EcosystemYield]
    duplicates_replanned: int
    seconds: float
    write_s: float
    data: str
    task_ids: list[str]


candidate_task = task(
    build_candidate, name="candidate", task_run_name="candidate-{candidate.index}",
    retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE, persist_result=False,
    retry_condition_fn=lambda _task, _run, state: isinstance(
        state.result(raise_on_failure=False), SandboxError),
)


def plan_run(settings: RunSettings) -> tuple[list[Candidate], int]:
    """Every ecosystem's share of the candidates, interleaved so that all ecosystems are in
    flight together; indices are unique within the run.  Returns them and the number of
    duplicate fingerprints re-planned."""
    planned, replanned = [], 0
    for position, ref in enumerate(settings.ecosystems):
        cands, stats = plan_candidates(ecosystem(ref), settings.share(position), settings.seed,
                                       settings.depth_weights)
        planned.append(cands)
        replanned += stats.duplicates_replanned
    order = [c for group in itertools.zip_longest(*planned) for c in group if c is not None]
    return [c.model_copy(update={"index": i}) for i, c in enumerate(order)], replanned


def _count(y: EcosystemYield, outcome: Outcome) -> None:
    y.candidates += 1
    if outcome.task:
        y.accepted += 1
        y.accepted_without_repair += not outcome.attempt.repairs
    else:
        key = f"{outcome.attempt.stage}/{outcome.attempt.reason}"
        y.rejected[key] = y.rejected.get(key, 0) + 1


def _write(writer: ShardWriter, outcome: Outcome) -> None:
    writer.add("attempts", outcome.attempt)
    if outcome.task:
        writer.add("tasks", outcome.task)
    for t in outcome.trajectories:
        writer.add("trajectories", t)


@flow(name="taskfactory", log_prints=True, persist_result=False, task_runner=runner_from_env())
def factory(settings: RunSettings, run_id: str | None = None) -> RunSummary:
    """Generate tasks into ``settings.data``; returns the run summary."""
    logger = get_run_logger()
    t0 = time.perf_counter()
    run_id = run_id or new_run_id()
    base = resolve_backend(settings.backend)
    settings = settings.runnable_on(base.type, logger.warning)
    refs = {ecosystem(ref).name: ref for ref in settings.ecosystems}
    if len(refs) != len(settings.ecosystems):
        raise ValueError(f"two of the ecosystems {settings.ecosystems} share a name")
    for ref in refs.values():  # refuse what cannot run here; build images once, up front
        backend_for(ecosystem(ref), base)
    reaped = provider_for(base, run_id).reap(None)  # one engine for every image
    if reaped:
        logger.warning("reaped %d orphaned sandboxes from dead runs", reaped)
    candidates, replanned = plan_run(settings)
    logger.info("run %s: %d candidates of %s on the %s backend, flow run %s", run_id,
                len(candidates), ", ".join(refs), base.type, flow_run.get_id())
    writer = ShardWriter(settings.data, run_id)
    progress = Progress(len(candidates), run_id)
    accepted: list[str] = []
    yields = {name: EcosystemYield() for name in refs}
    write_s = 0.0
    try:
        futures = {candidate_task.submit(c, refs[c.ecosystem], base, run_id,
                                         max_repairs=settings.max_repairs,
                                         instruction_style=settings.instruction_style): c
                   for c in candidates}
        for fut in as_completed(list(futures)):
            outcome = fut.result(raise_on_failure=False)
            c = futures[fut]
            if isinstance(outcome, BaseException):
                outcome = engine_failure(c, c.ecosystem, base.type, run_id, outcome)
            t_write = time.perf_counter()
            _write(writer, outcome)
            write_s += time.perf_counter() - t_write
            _count(yields[c.ecosystem], outcome)
            progress.done(outcome.task is not None)
            if outcome.task:
                accepted.append(outcome.task.task_id)
        t_write = time.perf_counter()
        writer.close()
        write_s += time.perf_counter() - t_write
    finally:
        progress.close()
        close_run(run_id)
    rejected: collections.Counter[str] = collections.Counter()
    for y in yields.values():
        rejected.update(y.rejected)
    summary = RunSummary(
        run_id=run_id, backend=base.type, candidates=len(candidates), accepted=len(accepted),
        accepted_without_repair=sum(y.accepted_without_repair for y in yields.values()),
        rejected=dict(rejected), ecosystems=yields, duplicates_replanned=replanned,
        seconds=round(time.perf_counter() - t0, 2), write_s=round(write_s, 3),
        data=str(settings.data),
        task_ids=sorted(accepted))
    create_table_artifact(
        key="taskfactory-run-summary", description=f"taskfactory run {run_id}",
        table=[{"metric": k, "value": str(v)} for k, v in summary.model_dump().items()
               if k not in ("task_ids", "ecosystems")])
    create_table_artifact(
        key="taskfactory-run-yield", description=f"yield per ecosystem, run {run_id}",
        table=[{"ecosystem": name, **y.model_dump(exclude={"rejected"}),
                "rejected": ", ".join(f"{k}={v}" for k, v in sorted(y.rejected.items()))}
               for name, y in yields.items()])
    return summary


def run_factory(settings: RunSettings, run_id: str | None = None, runner: str = "threads",
                address: str | None = None) -> RunSummary:
    """Run the flow on ``runner`` (a thread pool sized for I/O-bound sandbox work, or a
    Dask cluster at ``address``; see flows/runners.py)."""
    logging.getLogger("prefect").setLevel(logging.WARNING)
    task_runner = make_task_runner(runner, settings.workers, address)
    return factory.with_options(task_runner=task_runner)(settings, run_id=run_id)
