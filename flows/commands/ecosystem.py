"""``taskfactory check-ecosystem DIR``: the conformance suite on an ecosystem (a user's
folder or a built-in's name) on the chosen backend, a short plan, and a small real run of
the planned candidates (no dataset written), then a report card
(:mod:`tasks.conformance.card`).

Exit 0 only when every check passes and the trial accepted a task; 1 when the ecosystem
fails; 2 for bad input (no such ecosystem, a backend it does not run on), one line.  User
ecosystem code runs in its sandbox container unless ``--trust-ecosystem`` is given, as in
every other command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from flows.commands.arguments import add_trust_option, whole
from flows.commands.usage import UsageError

TRIAL_KINDS = {"build": 2.0, "fix": 1.0}
"""The trial's mix (fix where possible)."""
EXIT_FAILS = 1


def add_check_ecosystem_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-ecosystem", help="check that an ecosystem folder makes valid "
                       "tasks: conformance suite, short plan, small real run, report card")
    p.add_argument("ecosystem", metavar="DIR", help="ecosystem folder (or a built-in's name)")
    p.add_argument("--backend", choices=["auto", "docker", "local"], default="auto",
                   help="default auto: docker when a daemon answers, else local")
    p.add_argument("--tasks", type=whole, default=6,
                   help="candidates of the trial run (default 6; 0: no trial, which fails)")
    p.add_argument("--seed", type=whole, default=0, help="trial seed (default 0)")
    add_trust_option(p)
    p.set_defaults(func=cmd_check_ecosystem)


def cmd_check_ecosystem(args: argparse.Namespace) -> int:
    from environments.ecosystems import EcosystemError, load_ecosystem
    from tasks.conformance.card import Card, Trial
    from tasks.conformance.checks import seed_findings

    try:
        eco = load_ecosystem(args.ecosystem)
    except EcosystemError as exc:
        raise UsageError(str(exc)) from None
    backend = _backend(args.backend, eco)
    findings = seed_findings(eco)
    run_id = f"check-ecosystem-{os.getpid()}"
    with _closing(run_id):
        if all(f.ok for f in findings):
            findings += _sandbox_findings(eco, backend, run_id)
        trial = Trial()
        if all(f.ok for f in findings) and args.tasks:
            trial = _trial(eco, backend, run_id, args.tasks, args.seed)
    card = Card(eco, findings, trial)
    print("\n".join(card.lines()))
    return 0 if card.passes() else EXIT_FAILS


def _backend(choice: str, eco):  # noqa: ANN001, ANN202
    """The base backend config for ``choice``; UsageError when ``eco`` does not run there."""
    from environments.docker.config import DockerConfig, docker_available
    from environments.local.config import LocalConfig

    if choice == "auto":
        choice = "docker" if docker_available() else "local"
    elif choice == "docker" and not docker_available():
        raise UsageError("--backend docker: no Docker daemon answers; start one (make engine) "
                         "or use --backend local")
    if choice not in eco.spec.backends:
        raise UsageError(f"ecosystem {eco.name} runs on the {' or '.join(eco.spec.backends)} "
                         f"backend, not {choice}; pass --backend {eco.spec.backends[0]}")
    return DockerConfig() if choice == "docker" else LocalConfig()


@contextmanager
def _closing(run_id: str) -> Iterator[None]:
    from flows.run.providers import close_run

    try:
        yield
    finally:
        close_run(run_id)


def _sandbox_findings(eco, backend, run_id: str) -> list:  # noqa: ANN001
    from flows.run.providers import provider_for
    from tasks.conformance.checks import sandbox_findings
    from tasks.conformance.exercise import Exercise

    provider = provider_for(backend.for_ecosystem(eco), run_id)
    with provider.sandbox(labels={"taskfactory.check": eco.name}) as sandbox:
        return sandbox_findings(Exercise(eco, sandbox))


def _trial(eco, backend, run_id: str, n: int, seed: int):  # noqa: ANN001, ANN202
    """Plan ``n`` candidates and run each through the whole pipeline (two at a time)."""
    from flows.run.candidate import build_candidate
    from tasks.conformance.card import Trial
    from tasks.plan.planner import plan_candidates

    candidates, _ = plan_candidates(eco, n, seed, kinds=dict(TRIAL_KINDS))  # type: ignore[arg-type]
    trial = Trial(ran=True)
    ref = str(eco.folder) if eco.name not in _builtins() else eco.name
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda c: build_candidate(c, ref, backend, run_id),
                                 candidates))
    for candidate, outcome in zip(candidates, outcomes, strict=True):
        kind = candidate.graph.kind
        trial.planned[kind] += 1
        if outcome.task is not None:
            trial.accepted[kind] += 1
            trial.observed += bool(outcome.task.needs_observation)
        else:
            trial.rejected[f"{outcome.attempt.stage}/{outcome.attempt.reason}"] += 1
    print(f"trial: {len(candidates)} candidates run on the {backend.type} backend",
          file=sys.stderr)
    return trial


def _builtins() -> list[str]:
    from environments.ecosystems import builtin_names

    return builtin_names()
