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
