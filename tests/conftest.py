"""Shared pytest configuration. Keep each concern in its own clearly marked block."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# ==== docker availability (owner: environments/ sandbox layer) ===========================
# Tests marked ``@pytest.mark.docker`` need a Docker engine AND the base image. When either
# is missing they are skipped with a loud reason -- unless TASKFACTORY_REQUIRE_DOCKER=1
# (CI), where they fail instead. A summary line counts docker-backed tests by outcome.

DOCKER_BASE_IMAGE = "taskfactory/base:bookworm"
_docker_status: tuple[bool, str] | None = None
_docker_outcomes: dict[str, str] = {}
_docker_nodeids: set[str] = set()


def docker_status() -> tuple[bool, str]:
    """(ready, reason) -- cached for the session."""
    global _docker_status
    if _docker_status is None:
        try:
            import docker

            client = docker.from_env(timeout=10)
            try:
                client.ping()
                client.images.get(DOCKER_BASE_IMAGE)
                _docker_status = (True, "ready")
            finally:
                client.close()
        except Exception as e:  # no SDK, no daemon, no image, ...
            if type(e).__name__ == "ImageNotFound":
                why = f"image {DOCKER_BASE_IMAGE} is missing (build it with `make image`)"
            else:
                why = f"no Docker daemon answers ({type(e).__name__}: {e})"
            _docker_status = (False, why)
    return _docker_status


@pytest.fixture(scope="session")
def docker_ready() -> bool:
    """True when the Docker daemon answers and the base image exists."""
    return docker_status()[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _docker_nodeids.update(i.nodeid for i in items if i.get_closest_marker("docker"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is None:
        return
    ready, why = docker_status()
    if ready:
        return
    msg = f"Docker engine or base image unavailable: {why}"
    if os.environ.get("TASKFACTORY_REQUIRE_DOCKER") == "1":
        pytest.fail(f"{msg} (TASKFACTORY_REQUIRE_DOCKER=1: failing)", pytrace=False)
    pytest.skip(f"!!! {msg} -- docker-backed test NOT run !!!")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # under pytest-xdist the controller collects nothing: its reports carry the markers
    if report.nodeid not in _docker_nodeids and "docker" not in report.keywords:
        return
    if report.failed:
        outcome = "failed"
    elif report.skipped:
        outcome = "skipped"
    elif report.when == "call":
        outcome = "passed"
    else:
        return
    if _docker_outcomes.get(report.nodeid) != "failed":  # a failure is never downgraded
        _docker_outcomes[report.nodeid] = outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = {k: list(_docker_outcomes.values()).count(k) for k in ("passed", "failed", "skipped")}
    terminalreporter.write_line(
        f"docker-backed tests: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped",
        yellow=counts["skipped"] > 0,
        red=counts["failed"] > 0,
        bold=True,
    )
    if counts["skipped"]:
        terminalreporter.write_line(
            f"WARNING: docker-backed tests were skipped: {docker_status()[1]}", yellow=True
        )


@pytest.fixture(autouse=True, scope="module")
def fixture_ecosystems_trusted_without_docker() -> Iterator[None]:
    """A user's ecosystem folder runs in a sandbox container; with no engine here, the
    fixture folders (the project's own test code) run trusted instead, so the tests that
    use them without the ``docker`` marker still run."""
    if docker_status()[0]:
        yield
        return
    from environments.ecosystems.code import TRUST

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TRUST, "1")
        yield


# ==== end docker availability =============================================================


# ==== an SFT dataset (owner: tasks/exports/sft exports) ===========================================
# Candidates of three built-in ecosystems run in local sandboxes and committed the way the
# factory commits them; built once per session for the SFT export test modules.


@pytest.fixture(scope="session")
def sft_data(tmp_path_factory: pytest.TempPathFactory):
    from environments.local.config import LocalConfig
    from flows.run.candidate import build_candidate, ecosystem
    from flows.run.providers import close_run
    from tasks.plan.planner import plan_candidates
    from tests.support.dataset import write_outcomes

    run_id = f"itest-sft-export-{os.getpid()}"  # one per test process (pytest-xdist)
    root = tmp_path_factory.mktemp("sft") / "data"
    outcomes = [build_candidate(c, name, LocalConfig(), run_id)
                for name in ("files", "sql", "git")
                for c in plan_candidates(ecosystem(name), 4, run_seed=9)[0]]
    close_run(run_id)
    writer = write_outcomes(root, run_id, outcomes, max_rows=40)
    assert writer.written["tasks"] >= 9
    return root


# ==== end SFT dataset =====================================================================


# ==== Harbor, the reference implementation (owner: tasks/exports/atif) ============================
# Harbor's own code checks what the ATIF export writes: a Python 3.12 venv with the
# ``harbor`` package, made once and cached (tests/support/harbor_venv.py).  When it cannot
# be made the tests that need it are skipped with a loud reason -- unless
# TASKFACTORY_REQUIRE_DOCKER=1 (CI) or TASKFACTORY_REQUIRE_HARBOR=1, where they fail.


@pytest.fixture(scope="session")
def harbor():
    """The path of Harbor's venv."""
    from tests.support.harbor_venv import HarborUnavailable, harbor_venv

    try:
        return harbor_venv()
    except HarborUnavailable as exc:
        msg = f"Harbor is unavailable: {exc}"
        if "1" in (os.environ.get("TASKFACTORY_REQUIRE_DOCKER"),
                   os.environ.get("TASKFACTORY_REQUIRE_HARBOR")):
            pytest.fail(f"{msg} (Harbor required here: failing)", pytrace=False)
        pytest.skip(f"!!! {msg} -- Harbor-backed test NOT run !!!")


# ==== end Harbor ==========================================================================
