"""Every subcommand's options, fuzzed: 2,000 command lines each through the CLI's
``main`` in this process, each ending in exit code 0, 2 (one line) or 3, never a
traceback, with nothing written outside its temporary folder, and bad input stopped
before Prefect or Docker (tests/support/cli_fuzz.py).  The reading commands are in
test_cli_fuzz_reads.py, so that the two files run on two cores."""

import pytest

from flows.cli import build_parser
from tests.support.cli_fuzz import fuzz_subcommand, subcommands
from tests.unit.test_cli_fuzz_reads import READERS

WRITERS = [("run",), ("serve",), ("plan",), ("solve",), ("check-harbor",), ("repair",),
           ("vacuum",), ("import", "atif"), ("check-ecosystem",)]


@pytest.mark.parametrize("words", WRITERS, ids=" ".join)
def test_fuzzed_command_lines_end_in_a_documented_exit_code(words, tmp_path, monkeypatch):
    fuzz_subcommand(words, tmp_path, monkeypatch)


def test_every_subcommand_is_fuzzed():
    assert {words for words, _ in subcommands(build_parser())} == {*WRITERS, *READERS}
