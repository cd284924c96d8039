"""Unit tests run without Docker: the ecosystem folders under tests/fixtures (the
project's own test code) are trusted here, so their workers run on this host.  The
sandbox those folders get otherwise is tested with the engine, in
tests/integration/test_ecosystem_sandbox.py."""

import pytest

from environments.ecosystems.code import TRUST


@pytest.fixture(autouse=True)
def trusted_fixture_ecosystems(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST, "1")
