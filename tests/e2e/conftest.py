"""End-to-end fixtures: one Prefect test server for the session, reused by CLI subprocesses."""

import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="session")
def prefect_api_url():
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield PREFECT_API_URL.value()


@pytest.fixture
def cli(prefect_api_url):
    """Run ``taskfactory`` as a real subprocess against the session's Prefect server."""

    def run(*args, env=None, timeout=600):
        full_env = {**os.environ, "PREFECT_API_URL": prefect_api_url, **(env or {})}
        return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, args)],
                              capture_output=True, text=True, env=full_env, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def fault_dataset(prefect_api_url, tmp_path_factory, docker_ready):
    """One uninterrupted Docker run (tests/support/fault_dataset.py) that dataset fault
    tests copy and break; built once per session."""
    from tests.support.fault_dataset import SETTINGS, run_cli

    if not docker_ready:
        pytest.skip("needs the Docker engine")  # the docker marker reports it loudly
    data = tmp_path_factory.mktemp("fault-dataset") / "ref"
    proc = run_cli(prefect_api_url, "run", *SETTINGS, "--data", data)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return data
