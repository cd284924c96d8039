"""Discovery declarations: validated with the spec, triggered by what a step reads."""

import pytest
from pydantic import ValidationError

from environments.ecosystems import builtin_names, load_ecosystem
from schemas.ecosystem import Discovery, EcosystemSpec
from tasks.rules.discovery import planned


def test_a_first_discovery_cannot_take_the_triggering_value():
    with pytest.raises(ValidationError, match="no triggering value"):
        Discovery.model_validate({"name": "show", "description": "d", "label": "l",
                                  "before": "first", "command": "cat {{ p }}",
                                  "params": [{"name": "p", "description": "d",
                                              "from": "value"}]})


def test_a_discovery_may_not_take_a_tool_name():
    spec = load_ecosystem("files").spec.model_dump(by_alias=True)
    spec["discovery"][0]["name"] = spec["tools"][0]["name"]
    with pytest.raises(ValidationError, match="clash with tool names"):
        EcosystemSpec.model_validate(spec)


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_declares_discovery(name):
    assert load_ecosystem(name).spec.discovery


def _commands(eco, tool, args):
    return [command for _, _, command in planned(eco, eco.spec.tool(tool), args)]


def test_inputs_the_step_creates_trigger_nothing():
    git = load_ecosystem("git")
    assert _commands(git, "create_branch", {"name": "work/topic", "start": "v1.0"}) == [
        "git branch --list && git tag --list",
        "git log --oneline --decorate --abbrev=12 -n 5 v1.0 --"]
    service = load_ecosystem("service")
    created = _commands(service, "create_ticket", {"ticket": "31", "title": "t",
                                                   "team": "growth", "priority": "low"})
    assert "curl -sS http://127.0.0.1:8080/tickets/31" not in created
    assert created[-1] == "curl -sS http://127.0.0.1:8080/teams"


def test_parameters_come_from_the_value_or_the_step_input_of_a_type():
    sql = load_ecosystem("sql")
    assert _commands(sql, "describe_table", {"db": "shop.db", "table": "orders"}) == [
        "find * -type f | LC_ALL=C sort", "sqlite3 shop.db .schema",
        'sqlite3 shop.db ".schema orders"']
