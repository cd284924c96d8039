"""What a factory run reports: its summary, returned by the flow and published as table
artifacts of the flow run (``taskfactory-run-summary``, ``taskfactory-run-yield``)."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass

from prefect.artifacts import create_table_artifact
from pydantic import BaseModel

from flows.run import ui
from flows.settings import RunSettings
from tasks.dataset.runs import EcosystemYield, RunTally


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
    ecosystems: dict[str, EcosystemYield]
    duplicates_replanned: int
    resumed: bool
    seconds: float
    write_s: float
    config_hash: str


@dataclass(frozen=True)
class RunFacts:
    """What a run's summary says about the run itself, known once it is planned."""

    run_id: str
    backend: str
    runner: str
    candidates: int
    config_hash: str
    replanned: int
    t0: float
    """``time.perf_counter()`` when the flow started."""


def summarize(settings: RunSettings, facts: RunFacts, resumed: bool, write_s: float,
              tally: RunTally) -> RunSummary:
    """The run's summary, also published as the flow run's table artifacts."""
    rejected: collections.Counter[str] = collections.Counter()
    for y in tally.ecosystems.values():
        rejected.update(y.rejected)
    host, path = ui.dataset_location(settings.data)
    summary = RunSummary(
        data=path, host=host, run_id=facts.run_id, backend=facts.backend, runner=facts.runner,
        candidates=facts.candidates,
        skipped=facts.candidates - tally.attempts, accepted=tally.accepted,
        accepted_without_repair=sum(y.accepted_without_repair for y in tally.ecosystems.values()),
        rejected=dict(rejected), errored=tally.errored, duplicates=tally.duplicates,
        ecosystems=tally.ecosystems,
        duplicates_replanned=facts.replanned, resumed=resumed,
        seconds=round(time.perf_counter() - facts.t0, 2), write_s=round(write_s, 3),
        config_hash=facts.config_hash)
    run_id = facts.run_id
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
