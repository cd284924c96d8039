"""Discovery: the read-only inspections an agent makes before it first needs what they
reveal, run in the sandbox in the state the step that needs them starts from.

An ecosystem declares them (``discovery`` in ``ecosystem.yaml``, see
:class:`schemas.ecosystem.Discovery`).  Before a step runs, each discovery whose
``before`` is ``first`` or a semantic type of one of the step's inputs is rendered; a
command already run before an earlier kept step is not run again, so each costs one
exec at most.  Inputs the step creates (``fresh`` names, the new entry of a ``creates``
tool) trigger nothing: there is nothing to inspect yet.
"""

from __future__ import annotations

from collections.abc import Iterator

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox
from schemas.ecosystem import Discovery, ToolSpec, type_satisfies
from schemas.trace import DiscoveryTrace, Observation
from tasks.core.commands import render_shell

DISCOVERY_TIMEOUT_S = 20.0


def _inputs(tool: ToolSpec) -> list[tuple[str, str]]:
    """(parameter name, type) of the inputs that name something already there."""
    created = tool.returns.from_param if tool.creates else None
    return [(p.name, p.type) for p in tool.params if p.fresh is None and p.name != created]


def _bind(d: Discovery, tool: ToolSpec, args: dict[str, str], value: str | None
          ) -> dict[str, str] | None:
    """The discovery's arguments for this step, or None when one has no source."""
    out: dict[str, str] = {}
    for p in d.params:
        if p.from_ == "value" and value is not None:
            out[p.name] = value
            continue
        found = next((args[name] for name, typ in _inputs(tool)
                      if type_satisfies(typ, p.from_)), None)
        if found is None:
            return None
        out[p.name] = found
    return out


def planned(eco: Ecosystem, tool: ToolSpec, args: dict[str, str]
            ) -> Iterator[tuple[Discovery, dict[str, str], str]]:
    """Every discovery this step triggers, in declaration order then input order, as
    (discovery, its arguments, its rendered command); duplicates included."""
    for d in eco.spec.discovery:
        values: list[str | None] = [None] if d.before == "first" else [
            args[name] for name, typ in _inputs(tool) if type_satisfies(typ, d.before)]
        for value in values:
            bound = _bind(d, tool, args, value)
            if bound is not None:
                yield d, bound, render_shell(d.command, bound)


def run_discoveries(sandbox: Sandbox, eco: Ecosystem, tool: ToolSpec, args: dict[str, str],
                    done: set[str]) -> list[DiscoveryTrace]:
    """Run the discoveries this step triggers whose command is not in ``done`` (the
    commands already run before earlier kept steps); their traces, in order."""
    out: list[DiscoveryTrace] = []
    seen = set(done)
    for d, bound, command in planned(eco, tool, args):
        if command in seen:
            continue
        seen.add(command)
        result = sandbox.exec(["bash", "-c", command], timeout=DISCOVERY_TIMEOUT_S)
        out.append(DiscoveryTrace(name=d.name, args=bound, command=command,
                                  observation=Observation(**result.model_dump())))
    return out
