"""Server-wide limits (flows.run.limits) against the session's real Prefect server: the
``sandbox`` concurrency limit over a real CLI run, and the ``llm`` rate limit over real
HTTP to a local OpenAI-compatible server."""

import time
from contextlib import contextmanager

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from pydantic import BaseModel

from flows.run import limits
from tasks.core.llm import LLMClient, LLMConfig
from tasks.dataset.query import run_query
from tests.support.intervals import intervals, most_in_flight
from tests.support.openai_server import OpenAIServer


@contextmanager
def server_limit(name, limit, slot_decay_per_second=0.0):
    """The limit exists on the session's server while the block runs (other tests share it)."""
    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(
            name=name, limit=limit, slot_decay_per_second=slot_decay_per_second))
    try:
        yield
    finally:
        with get_client(sync_client=True) as client:
            client.delete_global_concurrency_limit_by_name(name)


def running_task_runs(data):
    """(start, end) of the run's candidate task runs, as the Prefect server recorded them."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    flow_run_id = run_query(data, "select flow_run_id from runs")[1][0][0]
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=[flow_run_id])))
    return [(r.start_time.timestamp(), r.end_time.timestamp()) for r in runs]


def test_sandbox_limit_bounds_the_candidates_in_flight(cli, tmp_path):
    def run(folder):
        proc = cli("run", "--tasks", 8, "--seed", 5, "--backend", "local", "--workers", 4,
                   "--ecosystem", "files", "--data", tmp_path / folder)
        assert proc.returncode == 0, proc.stderr
        return most_in_flight(intervals(tmp_path / folder))

    assert run("free") > 1  # four workers overlap when nothing limits them
    with server_limit(limits.SANDBOX, 1):
        assert run("limited") == 1
    # a candidate waiting for the slot is not shown as running: no two task runs overlap
    spans = running_task_runs(tmp_path / "limited")
    assert len(spans) == 8 and most_in_flight(spans) == 1


class Reply(BaseModel):
    n: int


def test_llm_rate_limit_spaces_the_requests(prefect_api_url):
    limits.recheck()  # this process may have asked about "llm" before it existed
    stamps = []
    with OpenAIServer() as srv, server_limit(limits.LLM, 1, slot_decay_per_second=2.0):
        for _ in range(5):
            srv.reply(lambda body: stamps.append(time.monotonic()) or {"n": 1})
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="m"), limits.llm_request)

        @flow
        def five_requests():
            for i in range(5):
                client.complete_json([{"role": "user", "content": f"q{i}"}], Reply, "test")

        five_requests()
        client.close()
    assert len(stamps) == 5
    # 2 slots/s free up: four waits of ~0.5 s; an unlimited client takes milliseconds
    assert stamps[-1] - stamps[0] >= 4 * 0.5 * 0.8
