"""Deliverables: which executed steps a goal-level task asks for, and which it leaves to
the solver (pure; nothing runs).

A write step's *key* is the probe entry it writes (its ``returns.from_param`` argument).
A step is *consumed* when a later executed step binds an input to its output (a ``step``
:class:`schemas.graph.Binding`).  The *deliverable keys* are the keys of the write steps
no later step consumes, the keys of seeded entries a step changes in place and of
entries a ``creates`` tool adds (records of the system, whose end state is part of the
goal whatever reads them later), plus
every key checked in a shared probe section (a table of the shop, a branch: the solver
may add nothing there it was not asked for, so it is asked for by name), plus every key a
checked value of a deliverable names as a whole token (a subtask's ``parent`` id, the
table a view selects from: a solver could not give that entry a name of its own and still
pass), until no more are named.  A write step is
*listed* when its key is a deliverable key — so every change of a deliverable entry is
listed, in order, even one that a later change of the same entry consumes (a ticket
changed twice, a branch created and then committed to).  The other write steps are
*intermediate*: how, and under which name, a solver produces them is its own business.
Their keys (minus the deliverable keys) are neither named in a goal-level instruction
nor checked by its verifier (:func:`goal_checks`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.ecosystem import EcosystemSpec, ToolSpec
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import GUARDS, Check
from tasks.core.failures import StageFailure
from tasks.rules.grounding import appears


def key_of(tool: ToolSpec, args: dict[str, str]) -> str | None:
    """The probe entry a write step writes (None for a read step)."""
    if tool.effect != "write" or not tool.returns.from_param:
        return None
    return args[tool.returns.from_param]


def changes_in_place(tool: ToolSpec) -> bool:
    """The tool changes an existing entry (named by a param that is not fresh) rather than
    creating one."""
    if tool.effect != "write" or tool.creates or not tool.returns.from_param:
        return False
    return tool.param(tool.returns.from_param).fresh is None


def names_own_entry(tool: ToolSpec) -> bool:
    """The tool's ``intent`` names the entry it writes (``{{ branch }} back at ...``)."""
    param = re.escape(str(tool.returns.from_param))
    return re.search(r"\{\{\s*" + param + r"\s*\}\}", tool.intent) is not None


@dataclass(frozen=True)
class Flow:
    """How the executed steps of a trace feed each other (indices into ``trace.steps``)."""

    ups: tuple[dict[str, int], ...]
    """Per step: input name -> the earlier step it is bound to."""
    consumed: frozenset[int]
    listed: frozenset[int]
    """Write steps whose key is a deliverable key."""
    intermediate: frozenset[int]
    """Write steps that are not listed."""
    intermediate_keys: frozenset[str]
    """Keys only intermediate steps write."""


def _named(checks: Sequence[Check], deliverable: set[str], produced: set[str]) -> set[str]:
    """The intermediate keys the checked values of deliverables (and of entries no step
    writes, and the answer) name."""
    texts = [c.expected if isinstance(c.expected, str) else json.dumps(c.expected)
             for c in checks if c.kind not in GUARDS
             and (c.key in deliverable or c.key not in produced)]
    return {k for k in produced - deliverable if appears(k, texts)}


def _lasting(spec: EcosystemSpec, trace: Trace, writes: dict[int, str]) -> set[str]:
    """Keys whose end state is always delivered, whatever consumes them later: entries
    the seed holds that a step changes in place (a ticket closed and then read), and
    entries a ``creates`` tool adds under an identity the environment assigns (a new
    ticket: a record of the system, not a work file the solver may name)."""
    created: set[str] = set()
    lasting = set()
    for i, key in writes.items():
        tool = spec.tool(trace.steps[i].tool)
        if tool.creates:
            lasting.add(key)
        if not changes_in_place(tool):
            created.add(key)
        elif key not in created:
            lasting.add(key)
    return lasting


def _shared_keys(spec: EcosystemSpec, checks: Sequence[Check]) -> set[str]:
    """Keys checked in a shared probe section: an entry there is asked for by name, never
    the solver's scratch (it may add nothing else there)."""
    return {c.key for c in checks if c.kind == "state"
            and (conf := spec.probe_sections.get(c.section)) is not None and conf.shared}


def flow(spec: EcosystemSpec, graph: WorkflowGraph, trace: Trace,
         checks: Sequence[Check] = ()) -> Flow:
    """The :class:`Flow` of ``trace``, executed from ``graph``, whose probe delta gave
    ``checks`` (see the module docstring)."""
    binds = {s.id: s.bind for s in graph.steps}
    index = {st.step_id: i for i, st in enumerate(trace.steps)}
    ups = tuple({name: index[b.step] for name, b in binds.get(st.step_id, {}).items()
                 if b.kind == "step" and b.step in index} for st in trace.steps)
    consumed = frozenset(u for bound in ups for u in bound.values())
    keys = {i: key_of(spec.tool(st.tool), st.args) for i, st in enumerate(trace.steps)}
    writes = {i: k for i, k in keys.items() if k is not None}
    deliverable = {k for i, k in writes.items() if i not in consumed}
    deliverable |= _lasting(spec, trace, writes)
    produced = set(writes.values())
    deliverable |= produced & _shared_keys(spec, checks)
    while named := _named(checks, deliverable, produced):
        deliverable |= named
    listed = frozenset(i for i, k in writes.items() if k in deliverable)
    return Flow(ups=ups, consumed=consumed, listed=listed,
                intermediate=frozenset(writes) - listed,
                intermediate_keys=frozenset(produced - deliverable))


def goal_checks(spec: EcosystemSpec, graph: WorkflowGraph, trace: Trace,
                checks: list[Check]) -> list[Check]:
    """``checks`` without the state checks of intermediate keys: a solver that never makes
    an intermediate result, or makes it under another name, is neither required nor
    penalised for it.  Raises ``verify/no_outcome`` when nothing is left to check."""
    dropped = flow(spec, graph, trace, checks).intermediate_keys
    kept = [c for c in checks if c.kind != "state" or c.key not in dropped]
    if all(c.kind in GUARDS for c in kept):
        raise StageFailure("verify", "no_outcome",
                           "only intermediate results change; nothing is delivered")
    return kept
