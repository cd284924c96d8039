"""Task runners for the factory flow: a thread pool on one machine, or a Dask cluster.

Candidates are I/O-bound (they wait on sandboxes), so one machine runs them in threads.
Past one machine, ``dask`` sends each candidate's task run to a Dask cluster through
Prefect's DaskTaskRunner: every Dask worker runs its candidates against its own Docker
engine (its ``DOCKER_HOST``), and results come back to the flow, which alone writes the
shards.  Without an address, a local cluster of worker processes is started.

The flow enters its runner itself, once its parameters are known (a flow's decorator
runner is fixed when the module is imported), so ``runner`` and ``address`` are flow
parameters; a deployment that leaves them unset takes them from its worker's environment
(``TASKFACTORY_RUNNER``, ``TASKFACTORY_DASK_ADDRESS``: the work pool's job variables).
How many candidates run at once is ``workers`` on either runner (:mod:`flows.run.admission`).
"""

from __future__ import annotations

import os
from enum import StrEnum

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

ENV_RUNNER, ENV_ADDRESS = "TASKFACTORY_RUNNER", "TASKFACTORY_DASK_ADDRESS"


class Runner(StrEnum):
    """Where candidates' task runs execute."""

    threads = "threads"
    dask = "dask"


RUNNER_HELP = ("threads: a thread pool in the flow's process; dask: a Dask cluster (the "
               "scheduler at address, else a local cluster of worker processes)")
ADDRESS_HELP = "the Dask scheduler, like tcp://host:8786 (only with the dask runner)"


def chosen_runner(runner: Runner | str | None, address: str | None
                  ) -> tuple[Runner, str | None]:
    """The runner and address given, else those of the environment, else threads;
    ValueError for an unknown runner."""
    name = runner or os.environ.get(ENV_RUNNER) or Runner.threads
    try:
        kind = Runner(name)
    except ValueError:
        raise ValueError(f"unknown task runner {name!r}; choose one of "
                         f"{', '.join(Runner)}") from None
    if kind is Runner.threads:
        return kind, None
    return kind, address or os.environ.get(ENV_ADDRESS) or None


def make_task_runner(kind: Runner | str, workers: int, address: str | None = None
                     ) -> TaskRunner:
    """A task runner with room for ``workers`` candidates in flight."""
    if Runner(kind) is Runner.threads:
        return ThreadPoolTaskRunner(max_workers=workers)
    from prefect_dask import DaskTaskRunner

    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": min(workers, os.cpu_count() or 1),
                                          "threads_per_worker": 2, "processes": True})
