"""Does a write step do work?  The probe states around it say.

A write step is *purposeless* when it changes nothing the probe sees; when it leaves an
entry as it was before an earlier step wrote it (it undoes that step: a label added then
removed, a ticket escalated then lowered again), or equal to the entry that earlier step
made it from (a new branch with a commit picked on top, moved back to its base); when it
sets again a field of a record that an earlier step of the task set (it overwrites that
step: a ticket created with one title and then retitled, closed and then reopened by an
escalation); or when the entry it writes, in a section declared ``distinct``, equals one
of its own inputs (``sort -u`` of a file that is already sorted and unique) or another
output of the task (the same rows copied into two tables).  Equality is the section's compare mode
(:func:`tasks.verify.comparisons.digest`), so "equal" means what the verifier would call
equal.

A workflow's answer is purposeless too when it prints the same without the last write
step and that step's result is intermediate (only later reads see it): the reference
minus that step would pass the gate's partial control; and a fix task's answer (its
report) is when it prints the same without the repair: it reports on something the fix
did not touch (:meth:`tasks.execute.repair.Run._check_answer_shows_work`).

Execution rejects such a step as ``execute/purposeless`` and repairs it like a degenerate
one (other arguments, another tool, or a shorter graph).  The digest of each write step's
entry is kept on the trace (``StepTrace.digest``) so ``stats`` can measure the same
properties from the shards.
"""

from __future__ import annotations

from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec
from tasks.execute.realize import state_without
from tasks.verify.comparisons import digest


@dataclass(frozen=True)
class Written:
    """One kept write step as this check needs it: its id, the entry it wrote (section and
    key; None when its output names no probed entry) and the states around it."""

    step_id: str
    entry: tuple[str, str] | None
    before: dict
    after: dict
    args: tuple[str, ...] = ()
    """The step's argument values."""
    settled: tuple[str, ...] = ()
    """The fields of a record it creates whose defaults count as set (``returns.settles``)."""


def written_entry(eco: Ecosystem, tool: ToolSpec, args: dict[str, str],
                  after: dict) -> tuple[str, str] | None:
    """The probed entry a write step names as its output: the first section (in the spec's
    order) holding the value of the tool's ``returns.from_param`` argument."""
    key = args.get(tool.returns.from_param or "")
    for name in eco.spec.probe_sections:
        if key is not None and key in after.get(name, {}):
            return name, key
    return None


def entry_digest(eco: Ecosystem, state: dict, entry: tuple[str, str] | None) -> str | None:
    """The entry's digest under its section's compare mode (None when absent)."""
    if entry is None or entry[1] not in state.get(entry[0], {}):
        return None
    return digest(state[entry[0]][entry[1]], eco.spec.probe_sections[entry[0]].compare)


def purposeless(eco: Ecosystem, tool: ToolSpec, args: dict[str, str], before: dict,
                after: dict, earlier: list[Written]) -> str | None:
    """Why the write step that took the state from ``before`` to ``after`` does no work, or
    None when it does.  ``earlier`` are the task's kept write steps before it, in order."""
    answer = eco.spec.answer_file
    if state_without(before, answer) == state_without(after, answer):
        return "it changes nothing"
    entry = written_entry(eco, tool, args, after)
    if entry is None:
        return None
    section, key = entry
    mine = after[section][key]
    compare = eco.spec.probe_sections[section].compare
    for w in earlier:
        if w.entry == entry and w.before.get(section, {}).get(key) == mine:
            return f"it leaves {section}/{key} as it was before step {w.step_id} changed it"
        if w.entry == entry and (source := _copy_of_source(w, mine, compare)):
            return (f"it leaves {section}/{key} as it was before step {w.step_id} changed "
                    f"it: equal to {source}, which that step started it from")
        if w.entry == entry and (fields := _overwritten(w, before.get(section, {}).get(key),
                                                       mine)):
            return (f"it overwrites the {' and '.join(fields)} of {section}/{key} that "
                    f"step {w.step_id} set")
    if not eco.spec.probe_sections[section].distinct:
        return None
    target = digest(mine, compare)
    inputs = [v for p, v in args.items() if p != tool.returns.from_param]
    outputs = [w.entry[1] for w in earlier if w.entry is not None and w.entry[0] == section]
    for other, what in [*((k, "its input") for k in inputs),
                        *((k, "the earlier output") for k in outputs)]:
        if other != key and other in after[section] \
                and digest(after[section][other], compare) == target:
            return f"its output {key} equals {what} {other}"
    return None


def _copy_of_source(w: Written, value: object, compare: str) -> str | None:
    """The input of the earlier step ``w`` (an entry of the section it wrote, as it was
    before ``w``) that ``value`` of ``w``'s entry equals: a branch made from another with a
    commit picked on top, then moved back to where that other one is, holds nothing the
    task made."""
    assert w.entry is not None
    section, key = w.entry
    target = digest(value, compare)
    for other in w.args:
        if other != key and other in w.before.get(section, {}) \
                and digest(w.before[section][other], compare) == target:
            return other
    return None


def _changed_fields(old: object, new: object) -> set[str]:
    """The fields of a record entry that differ between two of its values (a record that
    did not exist before: all its fields); none for an entry that is not a record."""
    if not isinstance(new, dict):
        return set()
    old = old if isinstance(old, dict) else {}
    return {f for f in new if old.get(f) != new[f]}


def _overwritten(w: Written, before: object, after: object) -> list[str]:
    """The fields of a record that the earlier step ``w`` set and this step (taking the
    record from ``before`` to ``after``) sets again: a ticket created with one title and
    then retitled, closed and then reopened by an escalation.  Of a record ``w`` created,
    the fields it set from its arguments count, and the defaults its tool settles (a new
    ticket is open, so resolving it at once undoes nothing but is no job either); other
    defaults are nobody's choice (a new ticket may be assigned next)."""
    assert w.entry is not None
    section, key = w.entry
    was, made = w.before.get(section, {}).get(key), w.after[section].get(key)
    theirs = _changed_fields(was, made)
    if was is None and isinstance(made, dict):
        theirs = {f for f in theirs if str(made[f]) in w.args or f in w.settled}
    return sorted(theirs & _changed_fields(before, after))
