"""The factory flow: plan candidates, run one Prefect task per candidate, write shards.

Wiring only — what runs, in what order, with what concurrency.  The stages live in
``tasks/``; the per-candidate pipeline in :mod:`flows.candidate`.
"""

from __future__ import annotations

import collections
import logging
import time

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel

from environments.config import resolve_backend
from environments.sandbox import SandboxError
from flows.candidate import Outcome, backend_for, build_candidate, ecosystem, engine_failure
from flows.provenance import new_run_id
from flows.providers import close_run, provider_for
from flows.settings import RunSettings
from tasks.plan import plan_candidates
from tasks.publish import ShardWriter


class RunSummary(BaseModel):
    run_id: str
    backend: str
    candidates: int
    accepted: int
    accepted_without_repair: int
    """Accepted with no repair applied: the yield the same candidates have with repair off."""
    rejected: dict[str, int]
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


def _write(writer: ShardWriter, outcome: Outcome) -> None:
    writer.add("attempts", outcome.attempt)
    if outcome.task:
        writer.add("tasks", outcome.task)
    for t in outcome.trajectories:
        writer.add("trajectories", t)


@flow(name="taskfactory", log_prints=True, persist_result=False)
def factory(settings: RunSettings, run_id: str | None = None) -> RunSummary:
    """Generate tasks into ``settings.data``; returns the run summary."""
    logger = get_run_logger()
    t0 = time.perf_counter()
    run_id = run_id or new_run_id()
    eco = ecosystem(settings.ecosystem)
    backend = backend_for(eco, resolve_backend(settings.backend))
    provider = provider_for(backend, run_id)
    reaped = provider.reap(None)
    if reaped:
        logger.warning("reaped %d orphaned sandboxes from dead runs", reaped)
    candidates, stats = plan_candidates(eco, settings.tasks, settings.seed,
                                        settings.depth_weights)
    logger.info("run %s: %d candidates of %s on the %s backend, flow run %s", run_id,
                len(candidates), eco.name, backend.type, flow_run.get_id())
    writer = ShardWriter(settings.data, run_id)
    accepted: list[str] = []
    unrepaired = 0
    rejected: collections.Counter[str] = collections.Counter()
    write_s = 0.0
    try:
        futures = {candidate_task.submit(c, settings.ecosystem, backend, run_id,
                                         max_repairs=settings.max_repairs,
                                         instruction_style=settings.instruction_style): c
                   for c in candidates}
        for fut in as_completed(list(futures)):
            outcome = fut.result(raise_on_failure=False)
            if isinstance(outcome, BaseException):
                outcome = engine_failure(futures[fut], eco.name, backend.type, run_id, outcome)
            t_write = time.perf_counter()
            _write(writer, outcome)
            write_s += time.perf_counter() - t_write
            if outcome.task:
                accepted.append(outcome.task.task_id)
                unrepaired += not outcome.attempt.repairs
            else:
                rejected[f"{outcome.attempt.stage}/{outcome.attempt.reason}"] += 1
        t_write = time.perf_counter()
        writer.close()
        write_s += time.perf_counter() - t_write
    finally:
        close_run(run_id)
    summary = RunSummary(
        run_id=run_id, backend=backend.type, candidates=len(candidates), accepted=len(accepted),
        accepted_without_repair=unrepaired,
        rejected=dict(rejected), duplicates_replanned=stats.duplicates_replanned,
        seconds=round(time.perf_counter() - t0, 2), write_s=round(write_s, 3),
        data=str(settings.data),
        task_ids=sorted(accepted))
    create_table_artifact(
        key="taskfactory-run-summary", description=f"taskfactory run {run_id}",
        table=[{"metric": k, "value": str(v)} for k, v in summary.model_dump().items()
               if k != "task_ids"])
    return summary


def run_factory(settings: RunSettings, run_id: str | None = None) -> RunSummary:
    """Run the flow with a thread pool sized for I/O-bound sandbox work."""
    logging.getLogger("prefect").setLevel(logging.WARNING)
    runner = ThreadPoolTaskRunner(max_workers=settings.workers)
    return factory.with_options(task_runner=runner)(settings, run_id=run_id)
