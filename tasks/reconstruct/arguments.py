"""A reconstruct program's arguments: the values its trace sampled.

A value a sampler drew from the candidate's state (a product, a branch, a threshold) or
from what an earlier step left (a line of a file it wrote, a value it printed) names
something of that state only; on another case the same program needs that case's value.
Every such value becomes an argument of the program (``run.sh DIR ARG...``) where its
tool's command uses it as a plain shell word (``{{ name }}``), a SQL string literal
(``{{ name | sql }}``) or a word of a double-quoted SQL statement (a column to rank by, a
count; a case whose value is no plain word then has no value for it).
:func:`program_arguments` finds them, :func:`parameterized` renders the trace with
``"${2}"``, ``"${3}"``... in their place, and
:func:`case_arguments` draws a case's values with the same samplers and RNG as execution,
from what each sampler reads on that case: its initial state, or what the program's
earlier steps leave there.  Other sampled values stay written in the program (the cases
stage then requires every case to hold them).
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import Sandbox
from schemas.graph import WorkflowGraph
from schemas.trace import StepTrace, Trace
from tasks.core.commands import render_shell, shell_script, shell_word, solution_failure
from tasks.core.failures import StageFailure, user_code_failure
from tasks.execute.realize import probe
from tasks.reconstruct.choices import kept

STEPS_TIMEOUT_S = 30.0
"""How long the program's steps before a sampled argument may run on one case."""
_EXPRESSION = re.compile(r"\{[{%]-?(.*?)-?[}%]\}", re.S)
_WORD = re.compile(r"^[\w.,-]+$")
"""A value a double-quoted statement may take unquoted: an identifier, a number, a list of
identifiers."""
BARE = "${{{}}}"
"""The form of an argument used as a word of a double-quoted string."""


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
    every use is ``{{ name | sql }}`` inside one (a SQL string literal), :data:`BARE` where
    every use is a plain ``{{ name }}`` inside one (a word of the statement); None
    otherwise."""
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
        elif use == name:
            forms.add(BARE)
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
            if b.kind == "sample" and p.sample is not None and _form(tool.command, p.name):
                found.append(Argument(step.id, p.name, p.description, len(found) + 2))
    return found


def parameterized(eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                  arguments: list[Argument]) -> Trace:
    """The trace whose commands make the program: each argument's value replaced by its
    positional parameter, and a value a read step printed for a later step (a lookup)
    captured in a shell variable that the later step uses (where the later step's command
    takes it as a plain word or a SQL string); every choice's value is captured too
    (:func:`tasks.reconstruct.choices.kept`: a case records it).  The values recorded in ``args``
    stay the candidate's."""
    words = {(a.step_id, a.param): str(a.position) for a in arguments}
    reads = captured_reads(eco, graph)
    words.update({key: f"v_{step}" for key, step in reads.items()})
    captured = set(reads.values()) | kept(eco, trace)
    steps = []
    for st in trace.steps:
        mine = {n: w for (sid, n), w in words.items() if sid == st.step_id}
        command = (_render(eco.spec.tool(st.tool).command, st.args, mine) if mine
                   else st.command)
        if st.step_id in captured:
            command = f'v_{st.step_id}="$({command})"'
        steps.append(st.model_copy(update={"command": command}))
    return trace.model_copy(update={"steps": steps})


def captured_reads(eco: Ecosystem, graph: WorkflowGraph) -> dict[tuple[str, str], str]:
    """(step, param) -> the read step whose printed value the program captures for it."""
    tools = {s.id: eco.spec.tool(s.tool) for s in graph.steps}
    return {(s.id, name): b.step for s in graph.steps for name, b in s.bind.items()
            if b.kind == "step" and b.step in tools and tools[b.step].effect == "read"
            and _form(tools[s.id].command, name) is not None}


def reads_initial(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, a: Argument) -> bool:
    """Argument ``a``'s sampler reads the initial state: no step before its own writes,
    and the file and values it reads are bound to the state or written by the planner."""
    steps = {s.id: s for s in graph.steps}
    step = steps[a.step_id]
    spec = eco.spec.tool(step.tool).param(a.param).sample
    assert spec is not None
    order = [st.step_id for st in trace.steps]
    before = order[:order.index(a.step_id)]
    reads = [spec.of] if spec.of else []
    return (all(eco.spec.tool(steps[s].tool).effect == "read" for s in before)
            and all(step.bind[n].kind in ("state", "literal") for n in [*reads, *spec.with_]))


def case_arguments(sandbox: Sandbox, eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                   arguments: list[Argument], seed: int, state: dict) -> tuple[list[str], bool]:
    """The arguments' values on the case realized in ``sandbox`` (seed ``seed``, probe
    state ``state``), drawn as execution draws them: the same sampler and RNG (seeded with
    the case's seed), from what the sampler reads at its step on that case.  A sampler
    that reads the initial state draws from ``state``; one that reads what an earlier step
    left (a file it wrote, a value it printed, the state after a write) draws after the
    program's steps before its own have run in the workspace, with the values drawn so
    far.  Returns the values and whether steps ran (the workspace is then no longer the
    initial state).  ``case_layout`` when the case has no value for one, ``case_failed``
    when a step before it fails."""
    steps = {s.id: s for s in graph.steps}
    order = [st.step_id for st in trace.steps]
    program = parameterized(eco, graph, trace, arguments)
    captured = captured_reads(eco, graph)
    traced = {st.step_id: st.args for st in trace.steps}
    drawn: dict[tuple[str, str], str] = {}
    printed: dict[str, str] = {}  # read step -> the value the program captured
    ran = 0
    current: dict | None = state

    def value(step_id: str, name: str) -> str:
        if (step_id, name) in drawn:
            return drawn[step_id, name]
        if (step_id, name) in captured:
            return printed[captured[step_id, name]]
        return traced[step_id][name]

    for a in arguments:
        at = order.index(a.step_id)
        if at > ran and (ran > 0 or not reads_initial(eco, graph, trace, a)):
            printed.update(_run_steps(sandbox, program.steps[ran:at], seed, [
                drawn.get((x.step_id, x.param), "") for x in arguments], printed))
            ran, current = at, None
        step, tool = steps[a.step_id], eco.spec.tool(steps[a.step_id].tool)
        spec, b = tool.param(a.param).sample, step.bind[a.param]
        assert spec is not None and b.facet is not None
        suffix = f":{b.draw}" if b.draw else ""
        rng = random.Random(f"{seed}:{step.id}:{a.param}{suffix}")
        try:
            if spec.of:
                content: bytes | dict = sandbox.read_file(value(a.step_id, spec.of))
            else:
                current = current if current is not None else probe(sandbox, eco)
                content = current
            drawn[a.step_id, a.param] = eco.sample(
                b.facet, content, rng, **{w: value(a.step_id, w) for w in spec.with_})
            if _form(tool.command, a.param) == BARE and not _WORD.match(
                    drawn[a.step_id, a.param]):
                raise ValueError(f"{drawn[a.step_id, a.param]!r} is no plain word, which "
                                 "the program's statement takes unquoted")
        except UserCodeError as exc:
            raise user_code_failure("cases", exc) from exc
        except (LookupError, ValueError, FileNotFoundError) as exc:
            raise StageFailure("cases", "case_layout", f"seed {seed} has no value for "
                               f"{tool.name}.{a.param}: {exc}") from exc
    return [drawn[a.step_id, a.param] for a in arguments], ran > 0


def _run_steps(sandbox: Sandbox, steps: list[StepTrace], seed: int, args: list[str],
               printed: dict[str, str]) -> dict[str, str]:
    """Runs the program's ``steps`` in the workspace with ``args`` and the values earlier
    steps printed (``printed``, their shell variables); returns the values these steps'
    captures hold."""
    names = [st.step_id for st in steps if st.command.startswith(f"v_{st.step_id}=")]
    keep = f"/tmp/taskfactory-captured-{uuid.uuid4().hex}"
    shown = " ".join(f'"$v_{n}"' for n in names)
    script = shell_script("The program's first steps.", [
        *[st.command for st in steps], f"printf '%s\\0' {shown} > {keep}"],
        enter='cd "$1"')
    done = sandbox.exec(["bash", "-s", "--", ".", *args], stdin=script.encode(),
                        env={f"v_{k}": v for k, v in printed.items()}, timeout=STEPS_TIMEOUT_S)
    if done.exit_code != 0:
        what = "timed out" if done.timed_out else solution_failure(done.exit_code, done.stderr)
        raise StageFailure("cases", "case_failed", f"the program's steps before a sampled "
                           f"argument fail on seed {seed}: {what}")
    values = sandbox.read_file(keep).decode("utf-8", errors="replace").split("\0")
    sandbox.exec(["rm", "-f", keep])
    return dict(zip(names, values, strict=False))
