"""The TOML writer: what it writes parses back with tomllib to the same data."""

import math
import tomllib

import pytest

from tasks.exports.harbor.toml import dumps


def test_round_trip_of_nested_tables_lists_and_scalars():
    doc = {
        "schema_version": "1.4",
        "task": {"name": "taskfactory/files-abc", "keywords": ["a", "b"]},
        "metadata": {"taskfactory": {"seed": 7, "ratio": 0.25, "ok": True,
                                     "gate": {"reward": 1.0, "trials": 0}},
                     "tags": ["x"]},
        "environment": {"cpus": 1.0, "healthcheck": {"command": "curl -sf 'http://x/'"}},
    }
    assert tomllib.loads(dumps(doc)) == doc


def test_none_is_left_out_and_odd_keys_and_strings_are_quoted():
    text = dumps({"a": None, "t": {"odd key": 'quote " and \\ and\nnewline', "n": None},
                  "list": [1, None, 2]})
    assert tomllib.loads(text) == {"t": {"odd key": 'quote " and \\ and\nnewline'},
                                   "list": [1, 2]}


def test_a_table_holding_only_tables_gets_no_empty_header():
    text = dumps({"metadata": {"taskfactory": {"x": 1}}})
    assert "[metadata]\n" not in text and "[metadata.taskfactory]" in text


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_floats_are_refused(bad):
    with pytest.raises(ValueError, match="cannot hold"):
        dumps({"x": bad})
