"""Task runners for the factory flow: a thread pool on one machine, or a Dask cluster.

Candidates are I/O-bound (they wait on sandboxes), so one machine runs them in threads.
Past one machine, ``dask`` sends each candidate's task run to a Dask cluster through
Prefect's DaskTaskRunner: every Dask worker runs its candidates against its own Docker
engine (its ``DOCKER_HOST``), and results come back to the flow, which alone writes the
shards.  Without an address, a local cluster of worker processes is started.
"""

from __future__ import annotations

import os

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

RUNNERS = ("threads", "dask")
ENV_RUNNER, ENV_ADDRESS = "TASKFACTORY_RUNNER", "TASKFACTORY_DASK_ADDRESS"


def make_task_runner(kind: str, workers: int, address: str | None = None) -> TaskRunner:
    """A task runner for ``workers`` candidates in flight; ValueError for an unknown kind."""
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": min(workers, os.cpu_count() or 1),
                                              "threads_per_worker": 2, "processes": True})
    raise ValueError(f"unknown task runner {kind!r}; choose one of {', '.join(RUNNERS)}")


def runner_from_env(workers: int = 4) -> TaskRunner:
    """The runner a deployment's worker asks for with TASKFACTORY_RUNNER (and, for dask,
    TASKFACTORY_DASK_ADDRESS) in its job variables; threads by default."""
    return make_task_runner(os.environ.get(ENV_RUNNER, "threads"), workers,
                            os.environ.get(ENV_ADDRESS) or None)
