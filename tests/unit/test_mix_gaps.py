"""No silent downgrade: a kind or property asked of an ecosystem that cannot give it is one
line naming what to add, unless the mix asks for it where possible (``fix?:1``)."""

import pytest

from environments.ecosystems import load_ecosystem
from flows.cli import main
from tasks.plan.mix import downgraded, parse_mix, unavailable

INVENTORY = "tests/fixtures/ecosystems/inventory"


def test_a_question_mark_asks_for_a_kind_where_possible():
    assert parse_mix("build:2,fix?:1") == ({"build": 2.0, "fix": 1.0}, ["fix"])
    assert parse_mix("build,reconstruct?") == ({"build": 1.0, "reconstruct": 1.0},
                                               ["reconstruct"])
    with pytest.raises(ValueError, match="where possible"):
        parse_mix("mend?:1")


def test_each_gap_is_one_line_naming_what_to_add_and_where_it_is_documented():
    inventory, service = load_ecosystem(INVENTORY), load_ecosystem("service")
    (fix,) = unavailable(inventory, {"build": 1, "fix": 1}, [])
    assert "no fault injectors" in fix and "ecosystem-reference.md#8-faults" in fix
    assert unavailable(inventory, {"build": 1, "fix": 1}, ["fix"]) == []
    assert downgraded(inventory, {"build": 1, "fix": 1}) and not downgraded(
        load_ecosystem("files"), {"build": 1, "fix": 1})
    (rec,) = unavailable(service, {"reconstruct": 1}, [])
    assert "folder interface" in rec and "#reconstruct-tasks" in rec
    (obs,) = unavailable(inventory, {"build": 1}, [], require_observation=True)
    assert "describers" in obs and "#7-describers" in obs
    assert unavailable(load_ecosystem("files"), {"build": 1, "fix": 1, "reconstruct": 1}, [],
                       require_observation=True) == []


def test_kinds_fix_without_injectors_is_exit_2_one_line_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "data"
    code = main(["run", "--ecosystem", INVENTORY, "--kinds", "fix", "--data", str(data),
                 "--tasks", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "no fault injectors" in err[0] and "#8-faults" in err[0]
    assert not data.exists()
