"""The factory flow: plan candidates, run one Prefect task per candidate, write shards.

Wiring only — what runs, in what order, with what concurrency.  The stages live in
``tasks/``; the per-candidate pipeline in :mod:`tasks.pipeline`, wired in
:mod:`flows.candidate`; dedup and provenance in :mod:`flows.recorder`; resume and rerun
semantics in :mod:`flows.runs`.

Candidates start in index order, ``workers`` at a time and each with a slot of the
server's ``sandbox`` limit when there is one (:mod:`flows.admission`), with at most
``WINDOW_PER_WORKER * workers`` not yet consumed; their outcomes are consumed **in index
order** and a consumed future is dropped at once.  Memory is bounded by that window and
the writer's buffer, plus ~2 KB per planned candidate (the plan is held as JSON,
:mod:`flows.planned`); dedup decisions (which depend on what came before) are the same on
every run.

Annotations here are real objects, not postponed strings: a served flow runs in a new
process from a pickled copy of :func:`factory`, which carries the globals its code uses
but not those its annotations name, and Prefect validates the parameters against them.
"""

import collections
import contextlib
import hashlib
import itertools
import json
import logging
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.filesystems import LocalFileSystem
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from prefect.states import State
from pydantic import BaseModel

from environments.config import resolve_backend
from environments.sandbox import SandboxError
from flows import heap, runs, ui
from flows.admission import Admission
from flows.candidate import (
    BackendConfig,
    backend_for,
    build_candidate,
    ecosystem,
    engine_failure,
)
from flows.infrastructure import retried
from flows.interrupts import keyboard_interrupts
from flows.parameters import effective_settings
from flows.planned import PlannedCandidates
from flows.progress import Progress
from flows.provenance import (
    RunIdentity,
    config_hash,
    generator_version,
    image_id,
    llm_identity,
    new_run_id,
)
from flows.providers import close_run, open_run, provider_for, run_closed
from flows.query import connect
from flows.recorder import Recorder
from flows.run_failure import failed_on_error
from flows.runners import Runner, chosen_runner, make_task_runner
from flows.settings import RunSettings
from schemas.graph import Candidate
from schemas.records import RunRow
from tasks.dedup import DedupIndex
from tasks.manifest import open_for_writing, save_manifest
from tasks.pipeline import Outcome
from tasks.plan import iter_candidates
from tasks.publish import ShardWriter

WINDOW_PER_WORKER = 4
RESULTS = ".results"
"""Prefect result storage inside the dataset folder; removed when no run is unfinished."""


class RunSummary(BaseModel):
    data: str
    """The dataset folder's absolute path on ``host``."""
    host: str
    """The machine the flow ran on (where ``data`` is)."""
    run_id: str
    backend: str
    runner: str
    """``threads``, or ``dask`` and the scheduler's address."""
    candidates: int
    skipped: int
    """Already in the dataset under the same config: not run again."""
    accepted: int
    accepted_without_repair: int
    rejected: dict[str, int]
    errored: int = 0
    """Stopped by the infrastructure (engine, Prefect API), neither accepted nor rejected:
    the run stays unfinished, and ``--resume`` runs them again."""
    duplicates: int
    ecosystems: dict[str, runs.EcosystemYield]
    duplicates_replanned: int
    resumed: bool
    seconds: float
    write_s: float
    config_hash: str


def run_candidate(candidate: Candidate, ecosystem_ref: str, backend: BackendConfig,
                  run_id: str, max_repairs: int, instruction_style: str,
                  config_hash: str) -> State:
    """:func:`flows.candidate.build_candidate`, ending in a state named after its outcome
    (:func:`flows.ui.outcome_state`; the result is the :class:`Outcome`).  ``config_hash``
    (code, images, templates, ...) is unused here but part of the task's cache key.  Runs
    in the process that executes the candidate (a Dask worker too), so each keeps its own
    heap trimmed.  Infrastructure failures are waited out and run again
    (:mod:`flows.infrastructure`)."""
    def attempt() -> Outcome:
        return build_candidate(candidate, ecosystem_ref, backend, run_id,
                               max_repairs=max_repairs, instruction_style=instruction_style)

    try:
        return ui.outcome_state(retried(attempt, backend, f"candidate {candidate.index}",
                                        stopping=lambda: run_closed(run_id)))
    finally:
        heap.candidate_finished()


candidate_task = task(
    run_candidate, name="candidate", task_run_name=ui.CANDIDATE_RUN_NAME,
    retries=2, retry_delay_seconds=1, cache_policy=INPUTS + TASK_SOURCE, persist_result=True,
    cache_result_in_memory=False,
    retry_condition_fn=lambda _task, _run, state: isinstance(
        state.result(raise_on_failure=False), SandboxError),
)
"""Cached on its inputs, which include the run id: a resumed run reuses the outcomes its
killed predecessor had computed but not yet committed; other runs never share them.
Results live on disk only: Prefect's in-memory result cache (1,000 entries) would hold
every outcome of a run up to that size."""


def plan_run(settings: RunSettings) -> tuple[PlannedCandidates, int]:
    """Every ecosystem's share of the candidates, interleaved so that all ecosystems are in
    flight together; indices are unique within the run.  Returns them and the number of
    duplicate fingerprints re-planned.  Planned one at a time and stored encoded: the plan
    never holds the candidates as objects."""
    streams = [iter_candidates(ecosystem(ref), settings.share(position), settings.seed,
                               settings.depth_weights)
               for position, ref in enumerate(settings.ecosystems)]
    plan, replanned = PlannedCandidates(), 0
    order = (x for group in itertools.zip_longest(*streams) for x in group if x is not None)
    for i, (c, dupes) in enumerate(order):
        plan.append(c.model_copy(update={"index": i}))
        replanned += dupes
    return plan, replanned


_ahead: dict[str, tuple[PlannedCandidates, int]] = {}


def _plan_key(settings: RunSettings) -> str:
    """What a plan depends on: the fields :func:`plan_run` reads."""
    return settings.model_dump_json(include={"tasks", "seed", "ecosystems", "depth_weights"})


def plan_ahead(settings: RunSettings) -> None:
    """Plan the run now, outside any flow run, so that a seed failing or hanging while
    planning (``UserCodeError``, ``PlanningError``) reaches the caller before Prefect runs
    anything; the flow then takes this plan instead of planning again."""
    _ahead[_plan_key(settings)] = plan_run(settings)


@flow(name="taskfactory", log_prints=True, persist_result=False)
def factory(settings: RunSettings, run_id: str | None = None, resume: bool = False,
            runner: Runner | None = None, address: str | None = None,
            only: list[str] | None = None) -> RunSummary:
    """Generate executable agent tasks into a dataset folder; returns the run summary.

    Args:
        settings: What to generate and where. In a deployment run, the fields given are
            merged over the deployment's settings.
        run_id: The taskfactory run to continue with resume (default: a new run id).
        resume: Continue the unfinished (interrupted or failed) run run_id.
        runner: threads: a thread pool in the flow's process; dask: a Dask cluster (the
            scheduler at address, else a local cluster of worker processes). Default: the
            worker's TASKFACTORY_RUNNER, else threads.
        address: The Dask scheduler, like tcp://host:8786. Default: the worker's
            TASKFACTORY_DASK_ADDRESS.
        only: With resume (taskfactory repair): re-run just these candidates of run_id.
    """
    logger = get_run_logger()
    t0 = time.perf_counter()
    settings = effective_settings(settings)
    kind, address = chosen_runner(runner, address)
    placement = f"{kind} {address}" if address else str(kind)
    run_id = run_id or new_run_id()
    ui.name_flow_run(run_id, settings.seed)
    base = resolve_backend(settings.backend)
    settings = settings.runnable_on(base.type, logger.warning)
    refs = {ecosystem(ref).name: ref for ref in settings.ecosystems}
    if len(refs) != len(settings.ecosystems):
        raise ValueError(f"two of the ecosystems {settings.ecosystems} share a name")
    backends = {name: backend_for(ecosystem(ref), base) for name, ref in refs.items()}
    images = {name: image_id(b) for name, b in backends.items()}
    llm = llm_identity()
    index = DedupIndex()
    chash = config_hash(
        ecosystems={n: ecosystem(r).digest for n, r in refs.items()}, images=images,
        backend=base.type, seed=settings.seed, depth_weights=settings.depth_weights,
        max_repairs=settings.max_repairs, instruction_style=settings.instruction_style, llm=llm,
        dedup=index.policy)
    data = settings.data
    plan, replanned = _ahead.pop(_plan_key(settings), None) or plan_run(settings)
    with open_for_writing(data, warn=logger.warning) as manifest, \
            failed_on_error(data) as run:
        with keyboard_interrupts():  # Ctrl-C while DuckDB reads the dataset is still Ctrl-C
            con = connect(data, warn=logger.warning)
            held = runs.held_candidates(con, chash)
            index.add_all(runs.indexed_tasks(con))
            con.close()
        todo, planned = plan.without(held, keep=only), len(plan)
        del plan  # only the candidates still to run are kept
        logger.info("run %s: %d candidates of %s on the %s backend, %d already in the "
                    "dataset, flow run %s", run_id, planned, ", ".join(refs),
                    base.type, planned - len(todo), flow_run.get_id())
        if not todo and not resume:  # a repeated run adds nothing, not even a runs row
            return _summary(settings, run_id, base.type, placement, planned, chash, replanned,
                            False, t0, 0.0, runs.RunTally())
        entry = runs.begin(manifest, run_id, settings.model_dump(mode="json"), chash,
                           flow_run.get_id(), repair=only is not None)
        save_manifest(data, manifest)
        run.run_id = run_id
        identity = RunIdentity(run_id=run_id, flow_run_id=flow_run.get_id(), config_hash=chash,
                               llm_model=llm[0], llm_params=llm[1])
        recorder = Recorder(identity, images, index)
        writer = ShardWriter(data, manifest, run_id, max_rows=settings.shard_rows)
        one = candidate_task.with_options(result_storage=_result_storage(data))
        open_run(run_id)
        reaped = provider_for(base, run_id).reap(None)  # one engine for every image
        if reaped:
            logger.warning("reaped %d orphaned sandboxes from dead runs", reaped)
        write_s = 0.0
        progress = Progress(len(todo), run_id)
        stack = contextlib.ExitStack()
        try:
            task_runner = stack.enter_context(make_task_runner(kind, settings.workers, address))

            def submit(c: Candidate) -> PrefectFuture:
                return task_runner.submit(one, {
                    "candidate": c, "ecosystem_ref": refs[c.ecosystem], "backend": base,
                    "run_id": run_id, "max_repairs": settings.max_repairs,
                    "instruction_style": settings.instruction_style, "config_hash": chash})

            for c, result in Admission(todo, submit, settings.workers,
                                       WINDOW_PER_WORKER * settings.workers, flow_run.get_id()):
                outcome = result if isinstance(result, Outcome) else engine_failure(
                    c, c.ecosystem, base.type, run_id, result)
                t_write = time.perf_counter()
                group = recorder.record(outcome)
                writer.add_group(group)
                write_s += time.perf_counter() - t_write
                progress.done(any(table == "tasks" for table, _ in group))
            t_write = time.perf_counter()
            writer.commit()
            write_s += time.perf_counter() - t_write
        finally:
            stack.close()
            progress.close()
            close_run(run_id)
        with keyboard_interrupts():
            con = connect(data, warn=logger.warning)
            tally = runs.tally(con, run_id)
        if tally.errored:  # unfinished: a resume runs the errored candidates again
            con.close()
            logger.warning("%d candidates errored (infrastructure); the run stays "
                           "unfinished", tally.errored)
            return _summary(settings, run_id, base.type, placement, planned, chash, replanned,
                            resume, t0, write_s, tally)
        entry.status = "complete"  # committed with the runs row, in one manifest update
        writer.add_group(runs.unless_recorded(con, run_id, [("runs", RunRow(
            run_id=run_id, flow_run_id=flow_run.get_id(), config_hash=chash,
            settings_json=json.dumps({**settings.model_dump(mode="json"), "images": images}),
            generator_version=generator_version(), status="complete",
            started_at=datetime.fromisoformat(entry.started_at), finished_at=datetime.now(UTC),
            resumes=entry.resumes, candidates=planned,
            skipped=planned - tally.attempts, accepted=tally.accepted,
            rejected=tally.attempts - tally.accepted, duplicates=tally.duplicates,
            provenance=identity.provenance(seed=settings.seed, image_id=None)))]))
        con.close()
        writer.commit()
        if all(e.status == "complete" for e in manifest.runs.values()):
            shutil.rmtree(data / RESULTS, ignore_errors=True)  # nothing left to resume
        heap.release()  # the report reads the whole dataset: start it from a trimmed heap
        _publish_report(data, run_id, logger)
    return _summary(settings, run_id, base.type, placement, planned, chash, replanned, resume,
                    t0, write_s, tally)


def _result_storage(data: Path) -> LocalFileSystem:
    """A saved storage block (Prefect requires one) for results under ``data/.results``."""
    folder = (data / RESULTS).resolve()
    name = "taskfactory-results-" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    block = LocalFileSystem(basepath=str(folder))
    block.save(name, overwrite=True)
    return block


@keyboard_interrupts()
def _publish_report(data: Path, run_id: str, logger: logging.Logger) -> None:
    """The dataset card (README.md + plots) and the same report as a markdown artifact."""
    from flows.card import write_card
    from flows.stats import report

    # The report reads the whole dataset: one thread (the report is Python-bound anyway)
    # and a memory limit keep its peak flat in the dataset's size.
    con = connect(data, warn=logger.warning, settings={"threads": 1, "memory_limit": "256MB"})
    try:
        markdown = report(con)
        write_card(data, con, markdown)
        create_markdown_artifact(key="taskfactory-dataset-report", markdown=markdown,
                                 description=f"dataset {data} after run {run_id}")
    finally:
        con.close()


def _summary(settings: RunSettings, run_id: str, backend: str, runner: str, candidates: int,
             chash: str, replanned: int, resumed: bool, t0: float, write_s: float,
             tally: runs.RunTally) -> RunSummary:
    rejected: collections.Counter[str] = collections.Counter()
    for y in tally.ecosystems.values():
        rejected.update(y.rejected)
    host, path = ui.dataset_location(settings.data)
    summary = RunSummary(
        data=path, host=host, run_id=run_id, backend=backend, runner=runner,
        candidates=candidates,
        skipped=candidates - tally.attempts, accepted=tally.accepted,
        accepted_without_repair=sum(y.accepted_without_repair for y in tally.ecosystems.values()),
        rejected=dict(rejected), errored=tally.errored, duplicates=tally.duplicates,
        ecosystems=tally.ecosystems,
        duplicates_replanned=replanned, resumed=resumed,
        seconds=round(time.perf_counter() - t0, 2), write_s=round(write_s, 3),
        config_hash=chash)
    ui.publish_location(settings.data, run_id)
    create_table_artifact(
        key="taskfactory-run-summary", description=f"taskfactory run {run_id} into {host}:{path}",
        table=[{"metric": k, "value": str(v)} for k, v in summary.model_dump().items()
               if k != "ecosystems"])
    create_table_artifact(
        key="taskfactory-run-yield", description=f"yield per ecosystem, run {run_id}",
        table=[{"ecosystem": name, **y.model_dump(exclude={"rejected"}),
                "rejected": ", ".join(f"{k}={v}" for k, v in sorted(y.rejected.items()))}
               for name, y in tally.ecosystems.items()])
    return summary


def run_factory(settings: RunSettings, run_id: str | None = None, resume: bool = False,
                runner: Runner | str = Runner.threads, address: str | None = None,
                only: list[str] | None = None) -> RunSummary:
    """Run the flow on ``runner`` (a thread pool sized for I/O-bound sandbox work, or a
    Dask cluster at ``address``; see flows/runners.py)."""
    logging.getLogger("prefect").setLevel(logging.WARNING)
    return factory(settings, run_id=run_id, resume=resume, runner=Runner(runner),
                   address=address, only=only)
