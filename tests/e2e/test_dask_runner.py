"""Past one machine: the factory on a real Dask cluster of separate worker processes.

The cluster is local (a scheduler and two worker processes started by the test); each
worker opens its own sandboxes, and the flow alone writes the shards.  The dataset must
equal what the thread pool writes for the same seed.
"""

import pytest

from flows.factory import run_factory
from flows.settings import RunSettings
from tasks.dataset.query import run_query

OUTCOME = ("select candidate_id, status, stage, reason, task_id from attempts "
           "order by candidate_id")


@pytest.fixture(scope="module")
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.mark.docker
def test_dask_run_equals_the_thread_pool_run(prefect_api_url, scheduler, tmp_path):
    from distributed import Client, get_task_stream

    settings = RunSettings(tasks=8, seed=4, data=tmp_path / "threads", backend="docker",
                           ecosystems=["files", "sql"])
    threads = run_factory(settings)
    with Client(scheduler) as client, get_task_stream(client) as stream:
        on_dask = run_factory(settings.model_copy(update={"data": tmp_path / "dask"}),
                              runner="dask", address=scheduler)
    workers = {t["worker"] for t in stream.data}
    assert len(stream.data) >= 8 and len(workers) == 2  # every candidate ran on the cluster
    assert on_dask.accepted == threads.accepted >= 6
    assert run_query(tmp_path / "dask", OUTCOME)[1] == run_query(tmp_path / "threads",
                                                                 OUTCOME)[1]
    ids = "select task_id from tasks order by task_id"
    assert run_query(tmp_path / "dask", ids)[1] == run_query(tmp_path / "threads", ids)[1]
    _, rows = run_query(tmp_path / "dask", "select count(*), count(distinct task_id) from tasks")
    assert rows == [(on_dask.accepted, on_dask.accepted)]  # nothing lost, nothing doubled
