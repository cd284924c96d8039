"""A reconstruct program's arguments: the values its trace sampled from the initial state.

A value a sampler drew from the candidate's state (a product, a branch, a threshold) names
something of that state only; on another case the same program needs that case's value.
Such a value becomes an argument of the program (``run.sh DIR ARG...``) when its sampler
reads the initial state (the probe, or a seeded file) and its tool's command uses it as a
plain shell word (``{{ name }}``) or a SQL string literal (``{{ name | sql }}``).
:func:`program_arguments` finds them, :func:`parameterized` renders the trace with
``"${2}"``, ``"${3}"``... in their place, and
:func:`draw_arguments` draws a case's values with the same samplers, from that case's
initial state.  Other sampled values stay written in the program (the cases stage then
requires every case to hold them).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import Sandbox
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from tasks.commands import render_shell, shell_word
from tasks.failures import StageFailure, user_code_failure

_EXPRESSION = re.compile(r"\{[{%]-?(.*?)-?[}%]\}", re.S)


@dataclass(frozen=True)
class Argument:
    """One argument of the program: step ``step_id``'s parameter ``param``."""

    step_id: str
    param: str
    description: str
    position: int
    """Its position on the command line (``$1`` is the workspace)."""


def _form(template: str, name: str) -> str | None:
    """How a shell parameter takes ``name``'s place in the template: ``"${{{}}}"`` where
    every use is a plain ``{{ name }}`` outside a double-quoted string, ``'${{{}}}'`` where
    every use is ``{{ name | sql }}`` inside one (a SQL string literal); None otherwise."""
    forms = set()
    for m in _EXPRESSION.finditer(template):
        use = " ".join(m.group(1).split())
        if not re.search(rf"\b{re.escape(name)}\b", use):
            continue
        quoted = len(re.findall(r'(?<!\\)"', template[:m.start()])) % 2 == 1
        if use == name and not quoted:
            forms.add('"${{{}}}"')
        elif use == f"{name} | sql" and quoted:
            forms.add("'${{{}}}'")
        else:
            return None
    return forms.pop() if len(forms) == 1 else None


def _render(template: str, args: dict[str, str], words: dict[str, str]) -> str:
    """The template rendered with ``words`` (name -> variable) in their parameters' form."""
    raw = {}
    for name, variable in words.items():
        form = _form(template, name)
        assert form is not None, f"{name} has no parameter form in {template!r}"
        template = re.sub(r"\{\{-?\s*" + re.escape(name) + r"\s*\|\s*sql\s*-?\}\}",
                          "{{ " + name + " }}", template)
        raw[name] = shell_word(form.format(variable))
    return render_shell(template, {**args, **raw})


def program_arguments(eco: Ecosystem, graph: WorkflowGraph) -> list[Argument]:
    """The sampled values the program takes as arguments, in step order."""
    found: list[Argument] = []
    for step in graph.steps:
        tool = eco.spec.tool(step.tool)
        for p in tool.params:
            b = step.bind[p.name]
            if b.kind != "sample" or p.sample is None or _form(tool.command, p.name) is None:
                continue
            reads = [p.sample.of] if p.sample.of else []
            if all(step.bind[n].kind == "state" for n in [*reads, *p.sample.with_]):
                found.append(Argument(step.id, p.name, p.description, len(found) + 2))
    return found


def parameterized(eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                  arguments: list[Argument]) -> Trace:
    """The trace whose commands make the program: each argument's value replaced by its
    positional parameter, and a value a read step printed for a later step (a lookup)
    captured in a shell variable that the later step uses (where the later step's command
    takes it as a plain word or a SQL string); the values recorded in ``args`` stay the
    candidate's."""
    words = {(a.step_id, a.param): str(a.position) for a in arguments}
    tools = {s.id: eco.spec.tool(s.tool) for s in graph.steps}
    captured: set[str] = set()
    for s in graph.steps:
        for name, b in s.bind.items():
            if (b.kind == "step" and b.step in tools and tools[b.step].effect == "read"
                    and _form(tools[s.id].command, name) is not None):
                words[(s.id, name)] = f"v_{b.step}"
                captured.add(b.step)
    steps = []
    for st in trace.steps:
        mine = {n: w for (sid, n), w in words.items() if sid == st.step_id}
        command = (_render(eco.spec.tool(st.tool).command, st.args, mine) if mine
                   else st.command)
        if st.step_id in captured:
            command = f'v_{st.step_id}="$({command})"'
        steps.append(st.model_copy(update={"command": command}))
    return trace.model_copy(update={"steps": steps})


def draw_arguments(sandbox: Sandbox, eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                   arguments: list[Argument], seed: int, state: dict) -> list[str]:
    """The arguments' values on the case realized in ``sandbox`` (seed ``seed``, probe
    state ``state``), drawn as execution draws them; ``case_layout`` when the case has no
    value for one."""
    steps = {s.id: s for s in graph.steps}
    args = {st.step_id: st.args for st in trace.steps}
    values = []
    for a in arguments:
        step, tool = steps[a.step_id], eco.spec.tool(steps[a.step_id].tool)
        spec, b = tool.param(a.param).sample, step.bind[a.param]
        assert spec is not None and b.facet is not None
        suffix = f":{b.draw}" if b.draw else ""
        rng = random.Random(f"{seed}:{step.id}:{a.param}{suffix}")
        try:
            content = sandbox.read_file(args[a.step_id][spec.of]) if spec.of else state
            values.append(eco.sample(b.facet, content, rng,
                                     **{w: args[a.step_id][w] for w in spec.with_}))
        except UserCodeError as exc:
            raise user_code_failure("cases", exc) from exc
        except (LookupError, ValueError, FileNotFoundError) as exc:
            raise StageFailure("cases", "case_layout", f"seed {seed} has no value for "
                               f"{tool.name}.{a.param}: {exc}") from exc
    return values
