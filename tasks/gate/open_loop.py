"""The open-loop solution: the reference solution as a solver would run it without looking
at anything, knowing only what the instruction writes (pure; nothing runs here).

Every argument of the trace whose value is not written in the instruction (not a whole
Markdown code span of it, the contract preservation holds instructions to) is replaced by a
wrong value of the same type, drawn from the seeded state:

- a sampled parameter: its sampler drawn again with another seed, over the initial probe
  state or the seeded bytes of the file it samples (``of``), until it gives another value;
- a ``fresh`` parameter (a name the solver picks): another fresh name;
- any other typed parameter: another seeded file of a type that satisfies it, else a
  value of a lookup's ``returns.sample`` or of another parameter's sampler whose type
  satisfies it and that reads the probe state alone (a looked-up ticket id becomes
  another seeded ticket).

One unknown value gets one guess wherever it recurs: an argument bound to an earlier
step's output is the value that step produced, so when the instruction does not write it,
the open-loop solver uses the same guess it used where that value was made (a name it
chose itself stays consistent; an id it would have had to look up stays wrong).  A value
for which nothing else of its type can be drawn stays as it is.

:func:`open_loop_script` returns None when every argument is written: the open-loop
solution is then the reference solution itself.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from schemas.ecosystem import Param, type_satisfies
from schemas.trace import Trace
from tasks.core.commands import render_command, solution_script
from tasks.gate.shortcuts import literals
from tasks.plan.shapes import fresh_name

DRAWS = 8
"""Sampler draws tried for a value other than the reference's."""


class _Guesser:
    """Draws the wrong values, one per unknown value (see the module docstring)."""

    def __init__(self, eco: Ecosystem, seed: int, state: dict, files: Mapping[str, bytes],
                 taken: set[str]) -> None:
        self.eco, self.seed, self.state, self.files = eco, seed, state, files
        self.taken = taken
        self.guesses: dict[str, str] = {}

    def guess(self, where: str, p: Param, value: str, args: dict[str, str]) -> str:
        if value not in self.guesses:
            self.guesses[value] = self._draw(where, p, value, args) or value
        return self.guesses[value]

    def _draw(self, where: str, p: Param, value: str, args: dict[str, str]) -> str | None:
        if p.fresh is not None:
            name = fresh_name(p.fresh, self.taken)
            self.taken.add(name)
            return name
        if p.sample is None:
            others = [f for f in sorted(self.files) if f != value
                      and (t := self.eco.state_type(f)) and type_satisfies(t, p.type)]
            if others:
                return random.Random(f"open-loop:{self.seed}:{where}").choice(others)
            facet = self._sampler_of(p.type)
            return None if facet is None else self._sample(where, facet, self.state, {}, value)
        content = self.state if p.sample.of is None else self.files.get(args[p.sample.of])
        if content is None:
            return None
        return self._sample(where, p.sample.facet, content,
                            {w: args[w] for w in p.sample.with_}, value)

    def _sampler_of(self, ptype: str) -> str | None:
        """A sampler of values of ``ptype`` from the probe state alone: a lookup's own
        (``returns.sample``), else another parameter's (a looked-up ticket id is guessed
        as another seeded ticket)."""
        for t in self.eco.spec.tools:
            if t.returns.sample and type_satisfies(t.returns.type, ptype):
                return t.returns.sample
        return next((q.sample.facet for t in self.eco.spec.tools for q in t.params
                     if q.sample is not None and q.fresh is None and q.sample.of is None
                     and not q.sample.with_ and type_satisfies(q.type, ptype)), None)

    def _sample(self, where: str, facet: str, content: bytes | dict,
                context: dict[str, str], value: str) -> str | None:
        for draw in range(DRAWS):
            rng = random.Random(f"open-loop:{self.seed}:{where}:{draw}")
            try:
                got = self.eco.sample(facet, content, rng, **context)
            except (LookupError, ValueError, UserCodeError):
                return None
            if got != value:
                return got
        return None


def open_loop_script(eco: Ecosystem, trace: Trace, instruction: str, seed: int,
                     state: dict, files: Mapping[str, bytes]) -> str | None:
    """The open-loop ``solve.sh`` for ``trace`` under ``instruction``, its wrong values
    drawn with ``seed`` from the initial probe ``state`` and the seeded ``files``; None when
    the instruction writes every argument (the open-loop solution is the reference)."""
    written = set(literals(instruction))
    taken = set(files) | {v for st in trace.steps for v in st.args.values()}
    guesser = _Guesser(eco, seed, state, files, taken)
    steps, changed = [], False
    for st in trace.steps:
        tool = eco.spec.tool(st.tool)
        args: dict[str, str] = {}
        for p in tool.params:
            value = st.args[p.name]
            args[p.name] = value if not value or value in written else guesser.guess(
                f"{st.step_id}:{p.name}", p, value, args)
        if args != st.args:
            changed = True
            st = st.model_copy(update={"args": args, "command": render_command(tool, args)})
        steps.append(st)
    if not changed:
        return None
    return solution_script(trace.model_copy(update={"steps": steps}), eco.spec.answer_file)
