"""Small real datasets for the Harbor export tests, made without a Prefect server.

Candidates go through the real per-candidate pipeline (``build_candidate``: a real
sandbox, execution, the gate) and their outcomes into a dataset through
:func:`tests.support.dataset.write_outcomes`, so the export reads what ``taskfactory run``
would have written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from schemas.graph import Candidate, TaskKind
from tasks.pipeline import Outcome
from tasks.plan.planner import plan_candidates

SHALLOW = {1: 1.0, 2: 2.0, 3: 1.0}
ROOT = Path(__file__).resolve().parents[2]


def accepted(refs: list[str], backend: DockerConfig | LocalConfig, per_ecosystem: int,
             run_id: str, seed: int = 3,
             kinds: dict[TaskKind, float] | None = None) -> list[Outcome]:
    """``per_ecosystem`` accepted outcomes of each ecosystem (planned shallow, seeded; of
    ``kinds``, default the planner's)."""
    tasks = []
    try:
        for ref in refs:
            candidates, _ = plan_candidates(ecosystem(ref), 4 * per_ecosystem, seed, SHALLOW,
                                            kinds)
            mine = 0
            for candidate in candidates:
                outcome = build_candidate(candidate, ref, backend, run_id)
                if outcome.task is not None:
                    tasks.append(outcome)
                    mine += 1
                if mine == per_ecosystem:
                    break
            assert mine == per_ecosystem, f"{ref}: only {mine} accepted"
    finally:
        close_run(run_id)
    return tasks


def built(candidates: list[tuple[Candidate, str]], backend: DockerConfig | LocalConfig,
          run_id: str) -> list[Outcome]:
    """The outcomes of hand-made candidates (each must be accepted)."""
    tasks = []
    try:
        for candidate, ref in candidates:
            outcome = build_candidate(candidate, ref, backend, run_id)
            assert outcome.task is not None, outcome.attempt.detail
            tasks.append(outcome)
    finally:
        close_run(run_id)
    return tasks


def taskfactory(*args: object, env: dict[str, str] | None = None,
                timeout: float = 1800) -> subprocess.CompletedProcess:
    """The CLI as a subprocess, from the project root."""
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=timeout)
