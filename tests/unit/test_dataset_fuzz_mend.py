"""Fuzzing what ``repair``, ``vacuum`` and ``export sft|harbor`` read from a dataset:
2,000 cases each, as in ``test_dataset_fuzz_read.py`` (:mod:`tests.support.fuzz_dataset`);
they write too, and nothing lands outside the dataset folder and ``--out``."""

import pytest

from tests.support.fuzz_dataset import fuzz


@pytest.mark.parametrize("command", ["repair", "vacuum", "export"])
def test_a_fuzzed_dataset_is_mended_or_refused_in_one_line(fuzz_original, tmp_path,
                                                           command):
    fuzz(fuzz_original, tmp_path, command)
