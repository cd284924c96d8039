"""The solve flow: k attempts of the built-in agent per task, written to ``rollouts``.

Wiring only.  The tasks of ``--data`` matching ``--where`` are read once; every
(task, attempt index) the dataset's ``rollouts`` do not hold for the model is one Prefect
task run (:func:`solve_attempt`), ``workers`` at a time on a thread pool; each row is
committed through the dataset's shard writer as soon as its attempt ends, under the
dataset's writer lock, so a killed solve loses only the attempts in flight and a second
solve with the same ``--k`` adds exactly those.  The endpoint is called through the
project's client (:class:`tasks.core.llm.LLMClient`: retries, breaker, token budget; no cache)
and every request waits for the server-wide ``llm`` limit when one exists
(:func:`flows.run.limits.llm_request`).  An attempt that the infrastructure fails (the engine,
a sandbox) is not written: a later solve runs it again.  At start, the sandboxes of dead
runs (a solve or a factory run killed before it could remove them) are reaped; live runs of
other processes are left alone.

Annotations are real objects (no postponed strings): Prefect validates a served flow's
parameters against them.
"""

import hashlib
import json
import os

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture, as_completed
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel

from environments.docker.config import DockerConfig
from environments.registry import make_provider
from environments.sandbox import SandboxError
from flows.parameters import effective_settings
from flows.run.limits import llm_request
from flows.run.progress import Ticker
from flows.solve_settings import SolveSettings
from schemas.records import RolloutRow
from tasks.core.failures import StageFailure
from tasks.core.llm import LLMClient, LLMConfig
from tasks.dataset import Dataset
from tasks.dataset.provenance import RunIdentity, new_run_id
from tasks.dataset.store.writer import ShardWriter
from tasks.exports.harbor.rebuild import fresh_environments
from tasks.exports.harbor.source import ExportTask, selected_tasks
from tasks.rollouts.rollout import Agent, Attempt, run_attempt

API_KEY_VARIABLES = ("TASKFACTORY_LLM_API_KEY", "OPENAI_API_KEY")


class SolveSummary(BaseModel):
    run_id: str
    tasks: int
    held: int
    """Attempts the dataset already held: not run again."""
    written: int
    errored: int
    """Attempts the infrastructure failed: not written, run again by the next solve."""


def held_attempts(dataset: Dataset, model: str) -> set[tuple[str, int]]:
    """(task_id, attempt) of the model's rollouts the dataset holds."""
    return {(t, int(a)) for t, a in dataset.rows(
        "select task_id, attempt from rollouts where model = ?", [model])}


def _config_hash(settings: SolveSettings) -> str:
    """What changes a rollout: model, endpoint, action space, limits, sampling."""
    relevant = settings.model_dump(mode="json", exclude={"data", "where", "workers", "k",
                                                         "ecosystem_dirs"})
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def _client(settings: SolveSettings) -> LLMClient:
    key = next((os.environ[v] for v in API_KEY_VARIABLES if os.environ.get(v)), "none")
    config = LLMConfig(base_url=settings.base_url, model=settings.model, api_key=key,
                       token_budget=settings.token_budget, temperature=settings.temperature,
                       timeout_s=max(30.0, settings.command_timeout_s))
    return LLMClient(config, before_request=llm_request)


def reap_dead_runs(run_id: str) -> int:
    """Remove every sandbox whose owner process is gone (the docker backend's
    ``reap(None)``); returns how many."""
    provider = make_provider(DockerConfig(), run_id)
    try:
        return provider.reap(None)
    finally:
        provider.close()


@task(name="solve-attempt", cache_policy=NO_CACHE)
def solve_attempt(exported: ExportTask, settings: SolveSettings, client: LLMClient,
                  attempt: int, run_id: str) -> RolloutRow:
    """One attempt in a fresh sandbox (:func:`tasks.rollouts.rollout.run_attempt`)."""
    with fresh_environments(exported, f"{run_id}-{exported.row.task_id[:8]}-{attempt}") as box:
        return run_attempt(box, exported,
                           Agent(client, settings.action_space, settings.limits,
                                 settings.sampling),
                           Attempt(attempt, settings.k, run_id))


@flow(name="taskfactory-solve", log_prints=True, persist_result=False)
def solve(settings: SolveSettings) -> SolveSummary:
    """Run the missing attempts of every selected task and commit each as it ends.

    Args:
        settings: What to solve, with which endpoint and model. In a deployment run, the
            fields given are merged over the deployment's; a relative data is resolved
            under the worker's TASKFACTORY_HOME. The API key is the worker's
            TASKFACTORY_LLM_API_KEY or OPENAI_API_KEY, never a parameter.
    """
    log = get_run_logger()
    settings = effective_settings(settings)
    dataset = Dataset.open(settings.data)
    chosen = selected_tasks(settings.data, settings.where, settings.ecosystem_dirs)
    run_id = f"solve-{new_run_id()}"
    if reaped := reap_dead_runs(run_id):
        log.warning("reaped %d orphaned sandboxes from dead runs", reaped)
    identity = RunIdentity(
        run_id=run_id, flow_run_id=flow_run.get_id(),
        config_hash=_config_hash(settings),
        llm_model=settings.model, llm_params=json.dumps(settings.sampling, sort_keys=True))
    summary = SolveSummary(run_id=run_id, tasks=len(chosen), held=0, written=0, errored=0)
    seeds = {t.row.task_id: t.row.seed for t in chosen}
    with dataset.writable() as manifest:
        held = held_attempts(dataset, settings.model)
        todo = [(t, i) for t in chosen for i in range(settings.k)
                if (t.row.task_id, i) not in held]
        summary.held = len(chosen) * settings.k - len(todo)
        log.info("solve %s: %d tasks x k=%d, %d attempts held, %d to run", run_id,
                 len(chosen), settings.k, summary.held, len(todo))
        writer = ShardWriter(settings.data, manifest, run_id, max_rows=1)
        runner: ThreadPoolTaskRunner = ThreadPoolTaskRunner(max_workers=settings.workers)
        with _client(settings) as client, runner, Ticker(len(todo),
                                                          words=("written", "errored")) as ticker:
            futures: list[PrefectFuture[RolloutRow]] = [runner.submit(solve_attempt, {
                "exported": t, "settings": settings, "client": client, "attempt": i,
                "run_id": run_id}) for t, i in todo]
            for future in as_completed(futures):
                try:
                    row = future.result()
                except (SandboxError, StageFailure) as exc:
                    summary.errored += 1
                    log.warning("an attempt errored (infrastructure), not written: %s", exc)
                    ticker.done(False)
                    continue
                stamped = row.model_copy(update={"provenance": identity.provenance(
                    seed=seeds[row.task_id], image_id=None)})
                writer.add_group([("rollouts", stamped)])
                summary.written += 1
                ticker.done(True)
        writer.close()
    return summary
