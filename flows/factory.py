"""The factory flow: plan candidates, run one Prefect task per candidate, write shards.

Wiring only — what runs, in what order, with what concurrency: settings and backends,
plan, open the run on the dataset, submit, consume in order, finish, report.  The stages
live in ``tasks/`` and run in the order of :mod:`tasks.pipeline`, wired per candidate in
:mod:`flows.run.candidate`; what the run writes — what it skips, dedup, provenance, commits,
how a run finishes or fails — in :mod:`tasks.dataset` (:class:`tasks.dataset.Dataset`,
:mod:`tasks.dataset.run_writer`).

Candidates start in index order, ``workers`` at a time and each with a slot of the
server's ``sandbox`` limit when there is one (:mod:`flows.run.admission`), with at most
``WINDOW_PER_WORKER * workers`` not yet consumed; their outcomes are consumed **in index
order** and a consumed future is dropped at once.  Memory is bounded by that window and
the writer's buffer, plus ~2 KB per planned candidate (the plan is held as JSON,
:mod:`flows.run.planned`); dedup decisions (which depend on what came before) are the same on
every run.

Annotations here are real objects, not postponed strings: a served flow runs in a new
process from a pickled copy of :func:`factory`, which carries the globals its code uses
but not those its annotations name, and Prefect validates the parameters against them.
"""

import errno
import hashlib
import heapq
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.filesystems import LocalFileSystem
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from prefect.states import State

from environments.config import BackendConfig
from environments.docker.images import image_id
from environments.registry import resolve_backend
from environments.sandbox import SandboxError
from flows.parameters import effective_settings
from flows.run import heap, ui
from flows.run.admission import Admission
from flows.run.candidate import build_candidate, ecosystem, engine_failure
from flows.run.infrastructure import retried
from flows.run.planned import PlannedCandidates
from flows.run.progress import Progress
from flows.run.providers import close_run, open_run, provider_for, run_closed
from flows.run.runners import Runner, chosen_runner, make_task_runner
from flows.run.summary import RunFacts, RunSummary, summarize
from flows.settings import RunSettings
from schemas.graph import Candidate
from tasks.dataset import Dataset, DatasetError
from tasks.dataset.dedup import DedupIndex
from tasks.dataset.provenance import (
    Built,
    Planned,
    RunIdentity,
    config_hash,
    llm_identity,
    new_run_id,
)
from tasks.dataset.run_writer import RunWriter
from tasks.dataset.runs import RunTally
from tasks.dataset.store.paths import real_folder
from tasks.pipeline import Outcome
from tasks.plan.planner import iter_candidates
from tasks.stages.settings import CandidateSettings

WINDOW_PER_WORKER = 4
RESULTS = ".results"
"""Prefect result storage inside the dataset folder; removed when no run is unfinished."""


def run_candidate(candidate: Candidate, ecosystem_ref: str, backend: BackendConfig,
                  run_id: str, settings: CandidateSettings, config_hash: str) -> State:
    """:func:`flows.run.candidate.build_candidate`, ending in a state named after its outcome
    (:func:`flows.run.ui.outcome_state`; the result is the :class:`Outcome`).  ``config_hash``
    (code, images, templates, ...) is unused here but part of the task's cache key.  Runs
    in the process that executes the candidate (a Dask worker too), so each keeps its own
    heap trimmed.  Infrastructure failures are waited out and run again
    (:mod:`flows.run.infrastructure`)."""
    def attempt() -> Outcome:
        return build_candidate(candidate, ecosystem_ref, backend, run_id, settings)

    try:
        return ui.outcome_state(retried(attempt, backend, f"candidate {candidate.index}",
                                        stopping=lambda: run_closed(run_id)))
    finally:
        heap.candidate_finished()


candidate_task = task(
    name="candidate", task_run_name=ui.CANDIDATE_RUN_NAME,
    retries=2, retry_delay_seconds=1, cache_policy=INPUTS + TASK_SOURCE, persist_result=True,
    cache_result_in_memory=False,
    retry_condition_fn=lambda _task, _run, state: isinstance(
        state.result(raise_on_failure=False), SandboxError),
)(run_candidate)
"""Cached on its inputs, which include the run id: a resumed run reuses the outcomes its
killed predecessor had computed but not yet committed; other runs never share them.
Results live on disk only: Prefect's in-memory result cache (1,000 entries) would hold
every outcome of a run up to that size."""


def plan_run(settings: RunSettings) -> tuple[PlannedCandidates, int]:
    """Every ecosystem's share of the candidates, interleaved so that all ecosystems are in
    flight together: each plans the run's indices :meth:`RunSettings.owners` gives it (with
    ``K`` ecosystems of one kind, position ``p`` plans ``p, p + K, ...``), the places its
    candidates take in the interleaving, and draws each candidate's kind, scenario and seed
    by that index.  Returns them and the number of
    duplicate fingerprints re-planned.  Planned one at a time and stored encoded: the plan
    never holds the candidates as objects."""
    indices = [settings.indices(p) for p in range(len(settings.ecosystems))]
    streams = [iter_candidates(ecosystem(ref), len(indices[p]), settings.seed,
                               settings.depth_weights, settings.kinds, settings.off_scenario,
                               indices=indices[p], tier=settings.difficulty)
               for p, ref in enumerate(settings.ecosystems)]
    plan, replanned = PlannedCandidates(), 0
    for c, dupes in heapq.merge(*streams, key=lambda planned: planned[0].index):
        plan.append(c)
        replanned += dupes
    return plan, replanned


_ahead: dict[str, tuple[PlannedCandidates, int]] = {}


def _plan_key(settings: RunSettings) -> str:
    """What a plan depends on: the fields :func:`plan_run` reads."""
    return settings.model_dump_json(include={"tasks", "seed", "ecosystems", "depth_weights",
                                             "kinds", "off_scenario", "stack_share",
                                             "difficulty"})


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
    run_id = run_id or new_run_id()
    ui.name_flow_run(run_id, settings.seed)
    base = resolve_backend(settings.backend)
    settings = settings.runnable_on(base.type, logger.warning)
    placement = f"{kind} {address}" if address else str(kind)
    refs, images, identity, index = _run_identity(settings, base, run_id)
    chash = identity.config_hash
    ahead = _ahead.pop(_plan_key(settings), None)
    plan, replanned = ahead if ahead is not None else plan_run(settings)
    dataset = Dataset(settings.data, warn=logger.warning)
    with dataset.run(identity, settings.model_dump(mode="json"), images, index,
                     repair=only is not None) as run:
        todo, planned = plan.without(run.held, keep=only), len(plan)
        del plan  # only the candidates still to run are kept
        logger.info("run %s: %d candidates of %s on the %s backend, %d already in the "
                    "dataset, flow run %s", run_id, planned, ", ".join(refs),
                    base.type, planned - len(todo), flow_run.get_id())
        facts = RunFacts(run_id, base.type, placement, planned, chash, replanned, t0)
        if not todo and not resume:  # a repeated run adds nothing, not even a runs row
            return summarize(settings, facts, False, 0.0, RunTally())
        run.keep_ecosystems((part.name, part.digest, part.folder)
                            for eco in map(ecosystem, refs.values()) for part in eco.parts
                            if not part.builtin)
        run.begin()
        tally = _consume(run, todo, planned, settings, Submission(refs, base, kind, address))
        if not tally.errored:  # else unfinished: a resume runs the errored candidates again
            if run.no_run_unfinished:
                shutil.rmtree(settings.data / RESULTS, ignore_errors=True)  # nothing to resume
            heap.release()  # the report reads the whole dataset: start it from a trimmed heap
            _, markdown = dataset.write_card()
            create_markdown_artifact(key="taskfactory-dataset-report", markdown=markdown,
                                     description=f"dataset {settings.data} after run {run_id}")
    return summarize(settings, facts, resume, run.write_s, tally)


def _run_identity(settings: RunSettings, base: BackendConfig, run_id: str
                  ) -> tuple[dict[str, str], dict[str, str | None], RunIdentity, DedupIndex]:
    """Ecosystem refs by name, image id per ecosystem, the run's identity (its config
    hash covers everything that changes outputs) and the dedup index whose policy it
    names."""
    refs = {ecosystem(ref).name: ref for ref in settings.ecosystems}
    if len(refs) != len(settings.ecosystems):
        raise ValueError(f"two of the ecosystems {settings.ecosystems} share a name")
    images = {name: image_id(base.for_ecosystem(ecosystem(ref))) for name, ref in refs.items()}
    llm = llm_identity()
    index = DedupIndex()
    chash = config_hash(
        Built({n: ecosystem(r).digest for n, r in refs.items()}, images, base.type),
        Planned(settings.seed, settings.depth_weights, settings.kinds, settings.off_scenario,
                settings.stack_share if settings.splits_stacks else None,
                settings.difficulty if settings.difficulty != "medium" else None),
        settings.candidate(), llm, index.policy)
    identity = RunIdentity(run_id=run_id, flow_run_id=flow_run.get_id(), config_hash=chash,
                           llm_model=llm[0], llm_params=llm[1])
    return refs, images, identity, index


@dataclass(frozen=True)
class Submission:
    """How a run submits its candidates: each with its ecosystem's ref (by name) and the
    base backend config, to the task runner ``kind`` (at ``address`` for Dask)."""

    refs: dict[str, str]
    base: BackendConfig
    kind: Runner
    address: str | None


def _consume(run: RunWriter, todo: PlannedCandidates, planned: int, settings: RunSettings,
             how: Submission) -> RunTally:
    """Submit the candidates, record their outcomes in index order, finish the run."""
    refs, base = how.refs, how.base
    logger = get_run_logger()
    one = candidate_task.with_options(result_storage=_result_storage(settings.data))
    open_run(run.run_id)
    reaped = provider_for(base, run.run_id).reap(None)  # one engine for every image
    if reaped:
        logger.warning("reaped %d orphaned sandboxes from dead runs", reaped)
    progress = Progress(len(todo), run.run_id)
    try:
        with make_task_runner(how.kind, settings.workers, how.address) as task_runner:
            def submit(c: Candidate) -> PrefectFuture:
                return task_runner.submit(one, {
                    "candidate": c, "ecosystem_ref": refs[c.ecosystem], "backend": base,
                    "run_id": run.run_id, "settings": settings.candidate(),
                    "config_hash": run.identity.config_hash})

            for c, result in Admission(todo, submit, settings.workers,
                                       WINDOW_PER_WORKER * settings.workers, flow_run.get_id()):
                outcome = result if isinstance(result, Outcome) else engine_failure(
                    c, c.ecosystem, base.type, run.run_id, cast(BaseException, result))
                progress.done(run.record(outcome))
            return run.finish(planned)
    finally:
        progress.close()
        close_run(run.run_id)


def _result_storage(data: Path) -> LocalFileSystem:
    """A saved storage block (Prefect requires one) for results under ``data/.results``
    (a real folder: OutsideError when a link or file is there)."""
    folder = real_folder(data, RESULTS, create=True)
    assert folder is not None
    folder = folder.resolve()
    name = "taskfactory-results-" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    block = LocalFileSystem(basepath=str(folder))
    block.save(name, overwrite=True)
    return block


class ReportedByTheCommand(logging.Filter):
    """Keeps Prefect's console from printing, with their tracebacks, the failures the
    command reports itself in one line: a dataset error (a full disk among them) that
    ends the flow, a task result a full or read-only disk refused (the Prefect API's log
    keeps them whole)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, DatasetError) or (
            isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)))


class _NotForCtrlC(logging.Filter):
    """Drops Prefect's "Crash detected! Execution was aborted by an interrupt signal." (or
    "by a termination signal"): the command says in one line that it was interrupted and
    what to do; every other crash is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("Crash detected! Execution was aborted by a" in message
                    and message.endswith(("interrupt signal.", "termination signal.")))


def run_factory(settings: RunSettings, run_id: str | None = None, resume: bool = False,
                runner: Runner | str = Runner.threads, address: str | None = None,
                only: list[str] | None = None) -> RunSummary:
    """Run the flow on ``runner`` (a thread pool sized for I/O-bound sandbox work, or a
    Dask cluster at ``address``; see flows/run/runners.py)."""
    logging.getLogger("prefect").setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:  # Prefect's console handler
        if not any(isinstance(f, ReportedByTheCommand) for f in handler.filters):
            handler.addFilter(ReportedByTheCommand())
    for name in ("prefect.flow_runs", "prefect.task_runs"):
        if not any(isinstance(f, _NotForCtrlC) for f in logging.getLogger(name).filters):
            logging.getLogger(name).addFilter(_NotForCtrlC())
    return factory(settings, run_id=run_id, resume=resume, runner=Runner(runner),
                   address=address, only=only)
