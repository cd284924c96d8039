"""Describers: seeded entries named by description instead of by their literal.

A goal-level instruction that writes ticket `12` hands the solver the id; "the ticket
titled `Login fails`" makes it look the ticket up.  For each literal argument of the trace
whose parameter's type satisfies a describer's ``type`` (not a value bound to an earlier
step, not a name the call gives a new entry), the describer's sampler ``facet`` draws a
distinguishing value from the initial probe state, and its ``command`` — rendered with
that value — runs in the sandbox, restored to the initial state.  The description is
kept only when the command prints exactly the literal: one line, that value (unique, not
ambiguous).  Otherwise, or when the description would show the task's answer, the
literal stays.

A kept description's command and what it printed are recorded as a discovery call of the
first step that uses the literal (before the discoveries that name it), so both
trajectory views show the lookup before the id, hash or key is used.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import Initial
from schemas.ecosystem import Describer, type_satisfies
from schemas.graph import WorkflowGraph
from schemas.trace import DiscoveryTrace, Observation, Trace
from tasks.core.commands import render_shell
from tasks.rules.compose import render_phrase
from tasks.rules.discovery import DISCOVERY_TIMEOUT_S
from tasks.rules.leaks import leaked_in


@dataclass(frozen=True)
class Description:
    """A literal named by description: the noun phrase, the distinguishing value it
    writes (a code span of the phrase) and the call that resolves it."""

    literal: str
    text: str
    shown: str
    call: DiscoveryTrace


def describable(eco: Ecosystem, graph: WorkflowGraph, trace: Trace
                ) -> list[tuple[str, Describer]]:
    """The trace's literals a describer may name, in order of first use, each with the
    first describer whose type its parameter satisfies."""
    binds = {s.id: s.bind for s in graph.steps}
    found: dict[str, Describer] = {}
    for st in trace.steps:
        tool = eco.spec.tool(st.tool)
        for p in tool.params:
            value = st.args.get(p.name, "")
            bound = binds.get(st.step_id, {}).get(p.name)
            if not value or value in found or tool.names_new_entry(p.name) \
                    or (bound is not None and bound.kind == "step"):
                continue
            d = next((d for d in eco.spec.describers if type_satisfies(p.type, d.type)), None)
            if d is not None:
                found[value] = d
    return list(found.items())


def describe(env: Initial, eco: Ecosystem, graph: WorkflowGraph, trace: Trace, state: dict,
             seed: int) -> dict[str, Description]:
    """The kept descriptions of ``trace``'s literals (see the module docstring); leaves
    ``env``'s sandbox in the initial state when it ran anything."""
    todo = describable(eco, graph, trace)
    if not todo:
        return {}
    sandbox = env.sandbox
    sandbox.restore(env.initial)
    kept: dict[str, Description] = {}
    for literal, d in todo:
        try:
            shown = eco.sample(d.facet, state, random.Random(f"describe:{seed}:{literal}"),
                               value=literal)
        except (LookupError, ValueError, UserCodeError):
            continue
        args = {d.param.name: shown}
        text = render_phrase(d.text, args)
        if trace.answer is not None and leaked_in(trace.answer, text, []):
            continue
        command = render_shell(d.command, args)
        result = sandbox.exec(["bash", "-c", command], timeout=DISCOVERY_TIMEOUT_S)
        if result.exit_code != 0 or result.stdout.strip() != literal:
            continue
        kept[literal] = Description(literal, text, shown, DiscoveryTrace(
            name=d.name, args=args, command=command,
            observation=Observation(**result.model_dump())))
    return kept


def with_resolutions(trace: Trace, descriptions: dict[str, Description]) -> Trace:
    """``trace`` with each description's call recorded before the first use of its
    literal: ahead of the first discovery of that step that names it, else last."""
    todo = dict(descriptions)
    steps = []
    for st in trace.steps:
        used = [x for x in todo if x in st.args.values()]
        found = list(st.discoveries)
        for literal in used:
            call = todo.pop(literal).call
            at = next((k for k, f in enumerate(found) if literal in f.args.values()),
                      len(found))
            found.insert(at, call)
        steps.append(st.model_copy(update={"discoveries": found}) if used else st)
    return trace.model_copy(update={"steps": steps})
