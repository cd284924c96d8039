"""The wiring of one candidate: the body of the per-candidate Prefect task.

:func:`build_candidate` resolves what the pipeline (:mod:`tasks.pipeline`) takes from the
run — the ecosystem, sandboxes from the run's providers, the LLM client under the server's
rate limit, the generator version — and runs it.  Infrastructure failures (the engine,
the Prefect API) are raised as :class:`flows.infrastructure.CandidateErrored` naming the
stage that was running; other engine errors (:class:`SandboxError`) propagate, so the
orchestrator can retry either.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import cache

from environments.config import BackendConfig
from environments.ecosystems import Ecosystem, load_ecosystem
from environments.sandbox import Sandbox
from flows import limits
from flows.infrastructure import CandidateErrored, errored
from flows.providers import provider_for
from schemas.graph import Candidate
from schemas.records import AttemptStatus
from tasks.core.llm import LLMClient, LLMConfig
from tasks.dataset.provenance import generator_version
from tasks.execute.realize import OpenSandbox
from tasks.pipeline import PIPELINE, Outcome, Pipeline, attempt_row
from tasks.stages.context import CandidateContext
from tasks.stages.settings import CandidateSettings

DEFAULTS = CandidateSettings()


@cache
def llm_client() -> LLMClient | None:
    """One client per process (one budget, one breaker) when TASKFACTORY_LLM_BASE_URL and
    _MODEL are set, else None: repair, paraphrase and reasoning all go through it, under
    the server's ``llm`` rate limit (:mod:`flows.limits`)."""
    config = LLMConfig.from_env()
    return LLMClient(config, limits.llm_request) if config is not None else None


@cache
def ecosystem(name_or_path: str) -> Ecosystem:
    return load_ecosystem(name_or_path)


def sandbox_opener(eco: Ecosystem, backend: BackendConfig, run_id: str,
                   candidate: Candidate) -> OpenSandbox:
    """Opens the candidate's sandboxes (its ecosystem's image plus any packages) from the
    run's provider, labelled with the candidate."""
    labels = {"taskfactory.candidate": candidate.candidate_id}

    def open_sandbox(packages: tuple[str, ...]) -> AbstractContextManager[Sandbox]:
        return provider_for(backend.for_ecosystem(eco, packages), run_id).sandbox(labels=labels)

    return open_sandbox


def build_candidate(candidate: Candidate, ecosystem_ref: str, backend: BackendConfig,
                    run_id: str, settings: CandidateSettings = DEFAULTS,
                    pipeline: Pipeline = PIPELINE) -> Outcome:
    """Run one candidate through ``pipeline`` with the run's ``settings`` and return its
    attempt (and task, if accepted).  ``backend`` is the base config (the ecosystem's image
    is derived from it)."""
    eco = ecosystem(ecosystem_ref)
    ctx = CandidateContext(
        candidate=candidate, graph=candidate.graph, eco=eco, run_id=run_id,
        open_sandbox=sandbox_opener(eco, backend, run_id, candidate), backend=backend.type,
        image=getattr(backend, "image", "local"), generator_version=generator_version(),
        settings=settings, llm=llm_client())
    try:
        return pipeline.run(ctx)
    except Exception as exc:
        failure = errored(ctx.stage, exc)
        if failure is None:
            raise
        raise failure from exc


def engine_failure(candidate: Candidate, eco_name: str, backend_type: str, run_id: str,
                   exc: BaseException) -> Outcome:
    """The attempt of a candidate whose sandbox kept failing after retries: ``errored``
    (stage and reason of the infrastructure failure) when the infrastructure failed,
    else rejected at stage ``sandbox``."""
    failure = errored("sandbox", exc)
    status: AttemptStatus
    if isinstance(failure, CandidateErrored):
        status, stage, reason, detail = "errored", failure.stage, failure.reason, failure.detail
    else:
        status, stage, reason = "rejected", "sandbox", "sandbox"
        detail = f"{type(exc).__name__}: {exc}"
    return Outcome(attempt=attempt_row(
        candidate, candidate.graph, ecosystem=eco_name, backend=backend_type, run_id=run_id,
        status=status, stage=stage, reason=reason, detail=detail))
