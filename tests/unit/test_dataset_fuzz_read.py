"""Fuzzing what ``query`` and ``stats`` read from a dataset: 2,000 cases each of a real
dataset with its manifest mutated (JSON types, sizes, nesting, unicode, huge numbers,
paths; cut and flipped bytes) or a shard damaged (cut, flipped, another table's, noise;
checksums fixed up or not), run in this process.  Every case: no traceback, exit code 0,
2, 3 or 75, warnings and at most one error line, nothing outside the dataset folder and
``--out`` read or written, no file written in place (:mod:`tests.support.fuzz_dataset`).
``repair``, ``vacuum`` and the exports: ``test_dataset_fuzz_mend.py`` (another file, so
that two test processes share the work)."""

import pytest

from tests.support.fuzz_dataset import fuzz


@pytest.mark.parametrize("command", ["query", "stats"])
def test_a_fuzzed_dataset_is_answered_or_refused_in_one_line(fuzz_original, tmp_path,
                                                             command):
    fuzz(fuzz_original, tmp_path, command)
