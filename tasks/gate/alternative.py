"""The alternative control's solution: the reference solution with each step's command
replaced by one of its tool's ``alternatives`` (pure; nothing runs here).

A sound verifier passes every correct route, not only the reference's.  Where a tool
declares other commands with the same effect, the alternative solution runs one of them
in place of the traced command (with the same arguments); the verifier must still give 1.
Which alternative a step gets is drawn with a generator seeded by the trace, so the gate
and ``check-harbor`` run the same script.  When it fails, :func:`explain` says where the
fix belongs: a failing entry the alternative itself wrote is compared more strictly than
its tool's intent fixes (the check's comparison); any other failing check depends on
bytes an earlier step's intent leaves open (the intent's wording).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.trace import StepTrace, Trace
from tasks.core.commands import render_shell, solution_script


@dataclass(frozen=True)
class AlternativeSolution:
    """The script, and the steps whose command it replaced (step id -> tool)."""

    script: str
    replaced: dict[str, str]

    def __str__(self) -> str:
        return ", ".join(f"{step} {tool}" for step, tool in self.replaced.items())


def alternative_solution(eco: Ecosystem, trace: Trace,
                         answer_file: str) -> AlternativeSolution | None:
    """The solution with each step's alternative where its tool has one, else None."""
    rng = random.Random(hashlib.sha256(
        "\n".join(st.command for st in trace.steps).encode()).hexdigest())
    steps, replaced = [], {}
    for st in trace.steps:
        options = eco.spec.tool(st.tool).alternatives
        if options:
            st = st.model_copy(update={"command": render_shell(rng.choice(options), st.args)})
            replaced[st.step_id] = st.tool
        steps.append(st)
    if not replaced:
        return None
    script = solution_script(trace.model_copy(update={"steps": steps}), answer_file)
    return AlternativeSolution(script, replaced)


def explain(eco: Ecosystem, trace: Trace, failed: tuple[str, ...]) -> str:
    """For each failing check (``section/key`` or the answer file): where the fix belongs.

    The step that produced the failing value is its entry's writer (the last step for the
    answer).  When a step upstream of it ran an alternative, the value depends on bytes
    that step's intent leaves open: the fix is the intent's wording.  Otherwise, when the
    producing step itself ran one, the check compares more than the intent fixes (for the
    answer: the alternative prints another value)."""
    solution = alternative_solution(eco, trace, eco.spec.answer_file)
    replaced = solution.replaced if solution else {}
    writers: dict[str, StepTrace] = {}
    upstream: dict[str, set[str]] = {}
    for st in trace.steps:
        before = {w.step_id for key, w in writers.items() if key in st.args.values()}
        upstream[st.step_id] = before | {u for b in before for u in upstream[b]}
        target = eco.spec.tool(st.tool).returns.from_param
        if target:
            writers[st.args[target]] = st
    said = []
    for where in failed:
        key = where.split("/", 1)[1] if "/" in where else where
        producer = trace.steps[-1] if where == eco.spec.answer_file else writers.get(key)
        if producer is None:
            said.append(where)
            continue
        opened = [u for u in sorted(upstream[producer.step_id]) if u in replaced]
        if opened:
            said.append(f"{where}: it depends on the exact output of "
                        f"{', '.join(f'{u} {replaced[u]}' for u in opened)}, which that "
                        "tool's intent leaves open (fix the intent's wording)")
        elif producer.step_id in replaced:
            said.append(f"{where} (from {producer.step_id} {producer.tool}): "
                        + ("the alternative prints another value"
                           if where == eco.spec.answer_file else
                           "the check's comparison is stricter than the tool's intent "
                           "(fix the comparison)"))
        else:
            said.append(where)
    return "; ".join(said)
