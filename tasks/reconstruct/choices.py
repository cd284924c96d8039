"""The choices of a reconstruct program: read steps that single out one entry of the state
by a rule ("the CSV file under `data/` with the most lines", "the customer with the most
orders", "the branch whose tip commit is the oldest").  A choice is a step whose tool
prints one value of a non-scalar type, a path, an id, a ref or a commit
(:attr:`schemas.ecosystem.ToolSpec.observes_value`); the instruction states its rule, never
the entry it found.

The program keeps what each choice printed in a shell variable (the last step's value is
the answer it writes), so a case records every choice's value (:func:`recorder`).  The
hidden cases must test each rule: :func:`untested` names a choice that resolves to an
entry of the public examples on every hidden case (the cases stage then tries other seeds,
:func:`pick_hidden`).  The gate's ``hardcoded`` control installs the program with each
choice replaced by the value it printed on the first public example
(:func:`hardcoded_program`): a program that learned the examples' entry, not the rule,
must score 0.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from environments.ecosystems import Ecosystem
from schemas.trace import StepTrace, Trace
from tasks.core.commands import answer_text


def choice_steps(eco: Ecosystem, trace: Trace) -> list[StepTrace]:
    """The trace's choices, in order."""
    return [st for st in trace.steps if eco.spec.tool(st.tool).observes_value]


def kept(eco: Ecosystem, trace: Trace) -> set[str]:
    """The choices the program captures in a shell variable ``v_<step>``: every one but a
    last step that writes the answer (its value is then the answer file)."""
    last = trace.steps[-1].step_id if trace.answer is not None else None
    return {st.step_id for st in choice_steps(eco, trace) if st.step_id != last}


def recorder(names: Sequence[str], keep: str) -> str:
    """A line that, appended to the program, writes the values of the choices ``names``
    captured to the file ``keep``, NUL-separated (empty for one the program left unset)."""
    shown = " ".join(f'"${{v_{n}-}}"' for n in names)
    return f"printf '%s\\0' {shown} > {shlex.quote(keep)}"


def _printing(st: StepTrace) -> str:
    """Step ``st`` of the program with its command replaced by printing what it printed on
    the first public example (captured in its variable when the program captures it)."""
    value = f"printf '%s\\n' {shlex.quote(answer_text(st.output))}"
    captured = st.command.startswith(f'v_{st.step_id}="$(')
    return f'v_{st.step_id}="$({value})"' if captured else value


def hardcoded_trace(eco: Ecosystem, trace: Trace) -> Trace:
    """The program's trace (:func:`tasks.reconstruct.program.program_trace`) with every choice's
    command printing the value it printed on the first public example."""
    chosen = {st.step_id for st in choice_steps(eco, trace)}
    return trace.model_copy(update={"steps": [
        st.model_copy(update={"command": _printing(st)}) if st.step_id in chosen else st
        for st in trace.steps]})


def untested(ids: Sequence[str], public: Sequence[Mapping[str, str]],
             hidden: Sequence[Mapping[str, str]]) -> list[str]:
    """The choices (step ids) that resolve, on every hidden case, to an entry some public
    case resolves them to (each case given as step id -> value)."""
    return [sid for sid in ids
            if all(h.get(sid) in {p.get(sid) for p in public} for h in hidden)]


def pick_hidden(ids: Sequence[str], public: Sequence[Mapping[str, str]],
                found: Sequence[Mapping[str, str]], n: int) -> list[int]:
    """Which ``n`` of the cases ``found`` (in the order they were run) are hidden: while a
    choice (step id) is untested, the earliest case that resolves the most untested
    choices to entries no public case has; then the earliest others.  Their indices, in
    run order."""
    seen = {sid: {p.get(sid) for p in public} for sid in ids}
    todo, picked = list(ids), list[int]()
    while todo and len(picked) < n:
        tests = {i: sum(found[i].get(sid) not in seen[sid] for sid in todo)
                 for i in range(len(found)) if i not in picked}
        best = max(tests, default=None, key=lambda i: (tests[i], -i))
        if best is None or not tests[best]:
            break
        picked.append(best)
        todo = [sid for sid in todo if found[best].get(sid) in seen[sid]]
    picked += [i for i in range(len(found)) if i not in picked][:max(0, n - len(picked))]
    return sorted(picked)
