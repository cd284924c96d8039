"""Where generated rows come from: generator version, run ids, config and template hashes.

The **config hash** identifies what a run produces: two runs with the same hash produce
the same rows for the same candidate, so a candidate already recorded under that hash is
not run again.  It covers everything that changes outputs — schema and generator
version, the ecosystems (name + content digest) and the sandbox image of each, the
backend, seed, depth weights, repair budget, templates and the LLM model and sampling
parameters — and deliberately none of the knobs that do not: ``tasks`` (how many, not
which: candidate *i* of an ecosystem is the same whatever the count), ``workers``,
``data`` and the run id.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel

from schemas.graph import TaskKind
from schemas.records import SCHEMA_VERSION, Provenance

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


@cache
def generator_version() -> str:
    """``<package version>+g<git commit>`` when run from a checkout, else the version."""
    try:
        pkg = version("taskfactory")
    except PackageNotFoundError:
        pkg = "0+unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=5, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{pkg}+g{commit}" if commit else pkg


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@cache
def template_hash(folder: Path = TEMPLATES) -> str:
    """Hash of every instruction and verifier template (names and bytes)."""
    return _digest({p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted(folder.iterdir()) if p.is_file()})


def llm_identity(env: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """(model, JSON of sampling parameters) of the configured LLM, or (None, None)."""
    from tasks.core.llm import LLMConfig

    config = LLMConfig.from_env() if env is None else LLMConfig.from_env(env)
    if config is None:
        return None, None
    return config.model, json.dumps({"temperature": config.temperature}, sort_keys=True)


@dataclass(frozen=True)
class Built:
    """What a run's candidates run on: ecosystem digests and image ids by name, the backend."""

    ecosystems: Mapping[str, str]
    images: Mapping[str, str | None]
    backend: str


@dataclass(frozen=True)
class Planned:
    """The settings a run's plan is drawn from."""

    seed: int
    depth_weights: Mapping[int, float]
    kinds: Mapping[TaskKind, float] | None = None
    off_scenario: float | None = None
    stack_share: float | None = None
    """Only where it splits the run (stacks and single ecosystems both)."""
    difficulty: str | None = None
    """Only where it is not ``medium`` (every run before tiers was)."""


def config_hash(built: Built, plan: Planned, candidate: BaseModel,
                llm: tuple[str | None, str | None], dedup: str) -> str:
    """The hash described in the module docstring; ``candidate`` is the settings every
    candidate receives (each field hashed by name)."""
    return _digest({
        "schema_version": SCHEMA_VERSION, "generator": generator_version(),
        "ecosystems": dict(sorted(built.ecosystems.items())),
        "images": dict(sorted(built.images.items())),
        "backend": built.backend, "seed": plan.seed,
        "depth_weights": {str(d): float(w) for d, w in sorted(plan.depth_weights.items())},
        **candidate.model_dump(mode="json"),
        "kinds": {k: float(w) for k, w in sorted((plan.kinds or {}).items())},
        "off_scenario": plan.off_scenario,
        **({"stack_share": plan.stack_share} if plan.stack_share is not None else {}),
        **({"difficulty": plan.difficulty} if plan.difficulty is not None else {}),
        "templates": template_hash(), "llm": list(llm),
        "dedup": dedup})


class RunIdentity(BaseModel):
    """The run-level half of :class:`Provenance`; :meth:`stamp` adds the per-row half."""

    run_id: str
    flow_run_id: str | None
    config_hash: str
    llm_model: str | None = None
    llm_params: str | None = None

    def provenance(self, seed: int, image_id: str | None,
                   created_at: datetime | None = None) -> Provenance:
        return Provenance(
            run_id=self.run_id, flow_run_id=self.flow_run_id,
            generator_version=generator_version(), config_hash=self.config_hash, seed=seed,
            image_id=image_id, template_hash=template_hash(), llm_model=self.llm_model,
            llm_params=self.llm_params, created_at=created_at or datetime.now(UTC))
