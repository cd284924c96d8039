"""The reading and exporting subcommands, fuzzed like the others (test_cli_fuzz.py)."""

import pytest

from tests.support.cli_fuzz import fuzz_subcommand

READERS = [("query",), ("stats",), ("card",), ("export", "sft"), ("export", "harbor"),
           ("export", "preference"), ("export", "atif")]


@pytest.mark.parametrize("words", READERS, ids=" ".join)
def test_fuzzed_command_lines_end_in_a_documented_exit_code(words, tmp_path, monkeypatch):
    fuzz_subcommand(words, tmp_path, monkeypatch)
