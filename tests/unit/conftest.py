"""Fixtures shared by unit test files."""

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def fuzz_original(tmp_path_factory) -> Path:
    """The dataset the fuzz cases copy (:func:`tests.support.fuzz_dataset.make_original`)."""
    from tests.support.fuzz_dataset import make_original

    return make_original(tmp_path_factory.mktemp("fuzz"))
