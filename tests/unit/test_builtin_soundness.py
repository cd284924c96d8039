"""What the soundness controls need from the built-in ecosystems: alternatives for most
tools (the alternative control) and vandal commands for every checked probe section (the
vandal control), each a template that renders with the tool's or the entry's values."""

import pytest

from environments.ecosystems import builtin_names, load_ecosystem
from tasks.core.commands import render_shell

BUILTINS = builtin_names()


def test_at_least_four_in_five_built_in_tools_declare_an_alternative():
    tools = [t for name in BUILTINS for t in load_ecosystem(name).spec.tools]
    with_alternatives = [t for t in tools if t.alternatives]
    assert len(with_alternatives) >= 0.8 * len(tools), (
        f"{len(with_alternatives)}/{len(tools)}",
        sorted(t.name for t in tools if not t.alternatives))


@pytest.mark.parametrize("name", BUILTINS)
def test_every_alternative_renders_with_the_tools_parameters_and_differs(name):
    for tool in load_ecosystem(name).spec.tools:
        args = {p.name: f"value-of-{p.name}" for p in tool.params}
        command = render_shell(tool.command, args)
        for alternative in tool.alternatives:
            assert render_shell(alternative, args) != command, tool.name


@pytest.mark.parametrize("name", BUILTINS)
def test_every_checked_probe_section_can_be_vandalized(name):
    sections = load_ecosystem(name).spec.probe_sections
    for section, conf in sections.items():
        if conf.checked:
            assert conf.preserved and conf.vandal, section
            for command in conf.vandal:
                assert "tf-key" in render_shell(command, {"key": "tf-key"}), command
