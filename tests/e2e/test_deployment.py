"""Deployments and ``serve`` on a real Prefect server: the ways a team schedules runs.

One Prefect server (SQLite) runs in a subprocess for the module.  deploy/prefect.yaml is
deployed as shipped with the Prefect CLI to its process work pool, next to a deployment of
the same flow with test defaults; runs are triggered through the API with parameters and
job variables and picked up by a real ``prefect worker start --run-once``.  ``taskfactory
serve`` runs as a subprocess, and the Dask deployment runs on a real ``dask scheduler``
with two ``dask worker`` processes.  Runs are small (the ``files`` ecosystem, mostly on
the local backend).  The shipped solve deployment runs one attempt of a scripted agent on
a real OpenAI-compatible server against a one-task dataset.
"""

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from environments.local.config import LocalConfig
from flows.commands.api_server import stop_process
from tasks.dataset import Dataset
from tasks.dataset.query import run_query
from tasks.dataset.store.manifest import load_manifest
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import accepted
from tests.support.intervals import intervals, most_in_flight
from tests.support.openai_server import Behaviour, OpenAIServer
from tests.support.prefect_server import PREFECT, prefect_server, server_env
from tests.support.scripted_agents import reference_calls, replay

ROOT = Path(__file__).resolve().parents[2]
POOL = "taskfactory"  # the shipped deployments' pool
CUSTOM = {"ecosystems": ["files"], "backend": "local", "seed": 7, "workers": 2, "tasks": 50}
"""The test deployment's settings: unlike the defaults in every field a run leaves out."""


def _cli(env, *args, timeout=300):
    done = subprocess.run([PREFECT, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("prefect")
    with prefect_server(home) as api_url:
        env = server_env(home, api_url)
        _cli(env, "work-pool", "create", POOL, "--type", "process")
        _cli(env, "--no-prompt", "deploy", "--prefect-file", "deploy/prefect.yaml", "--all")
        _cli(env, "--no-prompt", "deploy", "flows.factory:factory", "--name", "custom",
             "--pool", POOL, "--prefect-file", "deploy/prefect.yaml",
             "--params", json.dumps({"settings": CUSTOM}))
        yield api_url, env


def run_deployment(server, name, parameters, job_variables=None, worker_env=None, cwd=ROOT):
    """Trigger ``name`` through the API, let one worker run it; returns the flow run."""
    from prefect.client.orchestration import PrefectClient

    api_url, env = server

    async def go():
        async with PrefectClient(api_url) as client:
            deployment = await client.read_deployment_by_name(name)
            run = await client.create_flow_run_from_deployment(
                deployment.id, parameters=parameters, job_variables=job_variables)
            worker = subprocess.run(
                [PREFECT, "worker", "start", "--pool", POOL, "--run-once"],
                env={**env, **(worker_env or {})}, cwd=cwd, capture_output=True, text=True,
                timeout=900)
            assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
            return await client.read_flow_run(run.id)

    return asyncio.run(go())


def api(server):
    """A client of the module's server (the session's test server may be the default)."""
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(server[0])


def one_run_entry(data):
    (entry,) = load_manifest(data).runs.values()
    return entry


@pytest.mark.docker
def test_the_shipped_deployment_runs_on_a_worker_and_writes_its_dataset(server, tmp_path):
    with api(server) as client:
        nightly = client.read_deployment_by_name("taskfactory/nightly")
    assert nightly.entrypoint == "flows.factory:factory"  # importable by Dask workers too
    assert [s.schedule.cron for s in nightly.schedules] == ["0 3 * * *"]
    assert all(s.active for s in nightly.schedules)  # the schedule runs once deployed
    data = tmp_path / "data"
    run = run_deployment(server, "taskfactory/nightly", {"settings": {
        "tasks": 6, "seed": 5, "data": str(data), "ecosystems": ["files", "sql"],
        "workers": 2}})
    assert run.state.type.value == "COMPLETED"
    entry = one_run_entry(data)
    assert entry.status == "complete" and entry.flow_run_ids == [str(run.id)]
    assert run.name == f"{next(iter(load_manifest(data).runs))} seed 5"
    assert run_query(data, "select count(*), count(distinct candidate_id), "
                           "count(distinct backend) from attempts")[1] == [(6, 6, 1)]
    assert run_query(data, "select any_value(backend) from attempts")[1] == [("docker",)]
    _, rows = run_query(data, "select count(*) from tasks where gate.reference_reward = 1")
    assert rows[0][0] >= 4


@pytest.mark.docker
def test_the_shipped_solve_deployment_writes_the_rollouts_of_a_run(server, tmp_path):
    with api(server) as client:
        deployment = client.read_deployment_by_name("taskfactory-solve/solve")
    assert deployment.entrypoint == "flows.solve:solve"
    assert deployment.parameters["settings"]["k"] == 4
    fields = deployment.parameter_openapi_schema["definitions"]["SolveSettings"]["properties"]
    assert {"data", "k", "base_url", "model", "action_space", "where"} <= set(fields)
    assert not [f for f in fields if "key" in f]  # the worker's environment holds it
    data = tmp_path / "data"
    write_outcomes(data, "e2e-deploy-solve",
                   accepted(["files"], LocalConfig(), 1, "e2e-deploy-solve"))
    (task_id, messages), = Dataset.open(data).rows(
        "select task_id, messages from trajectories where action_space = 'terminal' and "
        "supervision = 'masked'")
    with OpenAIServer(Behaviour(message=replay(reference_calls(messages)))) as srv:
        run = run_deployment(server, "taskfactory-solve/solve", {"settings": {
            "data": str(data), "k": 1, "base_url": srv.base_url, "model": "replayer"}},
            worker_env={"OPENAI_API_KEY": "sk-deployed"})
        assert run.state.type.value == "COMPLETED", run.state.message
        assert srv.requests and all(r["model"] == "replayer" for r in srv.requests)
    assert list(Dataset.open(data).rows(
        "select task_id, attempt, k, action_space, stop_reason, reward, "
        "provenance.flow_run_id from rollouts")) == [
        (task_id, 0, 1, "terminal", "solved", 1.0, str(run.id))]


@pytest.fixture(scope="module")
def partial_run(server, tmp_path_factory):
    """A run of the test deployment given only ``tasks`` and a relative ``data``; its worker
    has TASKFACTORY_HOME and works in another folder."""
    home, elsewhere = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("cwd")
    run = run_deployment(server, "taskfactory/custom",
                         {"settings": {"tasks": 8, "data": "relative/data"}},
                         worker_env={"TASKFACTORY_HOME": str(home)}, cwd=elsewhere)
    return run, home / "relative" / "data"


def test_a_partial_settings_parameter_is_merged_over_the_deployments(partial_run):
    run, data = partial_run
    assert run.state.type.value == "COMPLETED"
    assert data.is_dir()  # resolved under the worker's TASKFACTORY_HOME when the run started
    settings = json.loads(run_query(data, "select settings_json from runs")[1][0][0])
    assert {k: settings[k] for k in CUSTOM} == {**CUSTOM, "tasks": 8}
    assert settings["data"] == str(data)
    assert run_query(data, "select ecosystem, backend, count(*) from attempts "
                           "group by all")[1] == [("files", "local", 8)]


def test_workers_bound_the_candidates_in_flight_in_a_deployment_run(partial_run):
    _, data = partial_run
    assert most_in_flight(intervals(data)) == CUSTOM["workers"]  # the worker's pool is larger


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dask_cluster(server, tmp_path_factory):
    """A real ``dask scheduler`` and two ``dask worker`` processes; yields the address."""
    from distributed import Client

    _, env = server
    address = f"tcp://127.0.0.1:{_free_port()}"
    dask = str(Path(sys.executable).with_name("dask"))
    cwd = tmp_path_factory.mktemp("dask")  # the workers import the flow by module name
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                               address.rsplit(":", 1)[1], "--no-dashboard"], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs += [subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--nthreads",
                                    "2", "--no-dashboard", "--name", f"w{i}"], env=env, cwd=cwd,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i in range(2)]
        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=180)
        yield address
    finally:
        for p in reversed(procs):
            stop_process(p, 30)


def test_a_deployment_runs_its_candidates_on_a_dask_cluster(server, dask_cluster, tmp_path):
    from distributed import Client, get_task_stream

    data = tmp_path / "data"
    with Client(dask_cluster) as client, get_task_stream(client) as stream:
        run = run_deployment(
            server, "taskfactory/custom", {"settings": {"tasks": 8, "data": str(data),
                                                        "workers": 4}},
            job_variables={"env": {"TASKFACTORY_RUNNER": "dask",
                                   "TASKFACTORY_DASK_ADDRESS": dask_cluster}})
    assert run.state.type.value == "COMPLETED"
    assert one_run_entry(data).status == "complete"
    assert {t["worker"] for t in stream.data} and len({t["worker"] for t in stream.data}) == 2
    assert run_query(data, "select count(*), count(distinct candidate_id) from attempts")[1] \
        == [(8, 8)]
    summary = json.loads(run_query(data, "select settings_json from runs")[1][0][0])
    assert summary["workers"] == 4


def test_serve_runs_the_flow_when_a_run_is_triggered(server, tmp_path):
    from prefect.exceptions import ObjectNotFound

    _, env = server
    data, log = tmp_path / "served", tmp_path / "serve.log"
    with open(log, "wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", "serve", "--name", "e2e-serve", "--tasks", "3",
             "--seed", "2", "--backend", "local", "--ecosystem", "files", "--data", str(data)],
            env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        with api(server) as client:
            deadline = time.monotonic() + 180
            while True:
                assert serve.poll() is None, log.read_text()[-3000:]
                try:
                    deployment = client.read_deployment_by_name("taskfactory/e2e-serve")
                    break
                except ObjectNotFound:
                    assert time.monotonic() < deadline, "serve never registered its deployment"
                    time.sleep(1)
            assert deployment.entrypoint == "flows.factory.factory"
            run = client.create_flow_run_from_deployment(deployment.id)
            deadline = time.monotonic() + 600
            while not (state := client.read_flow_run(run.id).state).is_final():
                assert serve.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, f"served run still {state.name}"
                time.sleep(2)
    finally:
        stop_process(serve, 30)
    assert state.type.value == "COMPLETED", state.message
    assert one_run_entry(data).status == "complete"
    assert run_query(data, "select count(*) from attempts")[1] == [(3,)]
