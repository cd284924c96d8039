"""Scheduled deployments on a real Prefect server: deploy/prefect.yaml as shipped.

A Prefect server (SQLite) runs in a subprocess; the test creates a process work pool,
deploys every deployment of deploy/prefect.yaml with the Prefect CLI, triggers a run of
the nightly deployment through the API (with small parameters), lets a real worker pick
it up, and checks the flow run's final state and the dataset it wrote.
"""

import asyncio
import subprocess
from pathlib import Path

import pytest

from flows.query import run_query
from tests.support.prefect_server import PREFECT, prefect_server, server_env

ROOT = Path(__file__).resolve().parents[2]


def _cli(env, *args, timeout=300):
    done = subprocess.run([PREFECT, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


async def _trigger_and_wait(api_url: str, parameters: dict, env: dict) -> str:
    from prefect.client.orchestration import PrefectClient

    async with PrefectClient(api_url) as client:
        deployment = await client.read_deployment_by_name("taskfactory/nightly")
        assert deployment.schedules and deployment.schedules[0].schedule.cron == "0 3 * * *"
        run = await client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
        worker = subprocess.run([PREFECT, "worker", "start", "--pool", "tf-e2e", "--run-once"],
                                env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
        state = (await client.read_flow_run(run.id)).state
        return state.type.value if state else "NONE"


@pytest.mark.docker
def test_a_deployed_flow_runs_on_a_worker_and_writes_its_dataset(tmp_path):
    with prefect_server(tmp_path / "prefect") as api_url:
        env = {**server_env(tmp_path / "prefect", api_url), "TASKFACTORY_HOME": str(ROOT)}
        _cli(env, "work-pool", "create", "tf-e2e", "--type", "process")
        _cli(env, "--no-prompt", "deploy", "--prefect-file", "deploy/prefect.yaml", "--all",
             "--pool", "tf-e2e")
        data = tmp_path / "data"
        parameters = {"settings": {"tasks": 6, "seed": 5, "data": str(data), "backend": "docker",
                                   "ecosystems": ["files", "sql"], "workers": 2}}
        state = asyncio.run(_trigger_and_wait(api_url, parameters, env))
    assert state == "COMPLETED"
    _, rows = run_query(data, "select count(*), count(distinct candidate_id) from attempts")
    assert rows == [(6, 6)]
    _, rows = run_query(data, "select count(*) from tasks where gate.reference_reward = 1")
    assert rows[0][0] >= 4
