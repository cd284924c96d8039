"""Fixtures shared by unit test files.

Unit tests run without Docker: the ecosystem folders under tests/fixtures (the project's
own test code) are trusted here, so their workers run on this host, also in module
fixtures and the CLI subprocesses tests start.  The sandbox those folders get otherwise is
tested with the engine, in tests/integration/test_ecosystem_sandbox.py."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from environments.ecosystems.code import TRUST
from tests.support.crafted import Guard


@pytest.fixture(autouse=True, scope="module")
def trusted_fixture_ecosystems() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TRUST, "1")
        yield


@pytest.fixture(scope="module")
def fuzz_original(tmp_path_factory) -> Path:
    """The dataset the fuzz cases copy (:func:`tests.support.fuzz_dataset.make_original`)."""
    from tests.support.fuzz_dataset import make_original

    return make_original(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture
def guard(tmp_path) -> Guard:
    """A guard folder beside the test's dataset (:class:`tests.support.crafted.Guard`)."""
    return Guard(tmp_path / "guard")
