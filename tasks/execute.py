"""Execution: run a workflow graph step by step in a sandbox and record the trace.

Arguments resolve in dependency order: upstream outputs, state values, planner literals,
and samples drawn from the sandbox's current files with an RNG seeded per candidate and
step, so a rerun resolves the same values.  Any failure raises :class:`StageFailure`
with its category from the taxonomy.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from collections.abc import Callable

import jinja2

from environments.ecosystems import Ecosystem
from environments.sandbox import ExecResult, Sandbox, Snapshot
from schemas.ecosystem import ToolSpec, type_satisfies
from schemas.graph import Candidate, Step
from schemas.trace import Observation, Repair, StepTrace, Trace
from tasks.failures import StageFailure
from tasks.normalize import normalize
from tasks.realize import probe
from tasks.repair_llm import RepairProposal, RepairRequest

STEP_TIMEOUT_S = 20.0
ANSWER_FILE = "answer.txt"


class _Raw(str):
    """Already safe for the shell: rendered without another round of quoting."""


def _sql_literal(value: object) -> _Raw:
    """A SQL string literal, safe inside a double-quoted shell string."""
    literal = "'" + str(value).replace("'", "''") + "'"
    for ch in ("\\", '"', "$", "`"):
        literal = literal.replace(ch, "\\" + ch)
    return _Raw(literal)


_SHELL = jinja2.Environment(
    finalize=lambda v: v if isinstance(v, _Raw) else shlex.quote(str(v)), autoescape=False,
    undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
_SHELL.filters["sql"] = _sql_literal
_SHELL.filters["json"] = lambda v: json.dumps(v, sort_keys=True)


def render_command(tool: ToolSpec, args: dict[str, str]) -> str:
    """The tool's command with every argument shell-quoted."""
    return _SHELL.from_string(tool.command).render(**args).strip()


_REJECTED_ARGUMENT = re.compile(
    r"invalid (number|argument|option|value)|unrecognized option|illegal option|"
    r"not a valid|bad argument|invalid literal|expects? (an? )?(integer|number)", re.I)


_RESOURCE_SIGNS = ("Cannot allocate memory", "Resource temporarily unavailable", "MemoryError")


def _classify(result: ExecResult) -> StageFailure | None:
    """The failure category of a finished command, or None when it succeeded.

    A command that ran out of time after hitting the memory or process limit is a
    ``resource`` failure: a shell whose forks fail retries them for ~15 s, so a fork bomb
    can outlast a short step limit."""
    err = result.stderr.strip().splitlines()[-1:] or [""]
    if result.timed_out:
        if any(sign in result.stderr for sign in _RESOURCE_SIGNS):
            return StageFailure("execute", "resource", f"timed out at a limit: {err[0]}")
        return StageFailure("execute", "timeout", "step exceeded its time limit")
    if result.exit_code == 0:
        return None
    if result.exit_code in (126, 127) or "command not found" in result.stderr:
        return StageFailure("execute", "environment", f"exit {result.exit_code}: {err[0]}")
    if result.exit_code == 137 or any(sign in result.stderr for sign in _RESOURCE_SIGNS):
        return StageFailure("execute", "resource", f"exit {result.exit_code}: {err[0]}")
    if "No such file" in result.stderr:
        return StageFailure("execute", "environment", f"exit {result.exit_code}: {err[0]}")
    if _REJECTED_ARGUMENT.search(result.stderr):
        return StageFailure("execute", "binding", f"exit {result.exit_code}: {err[0]}")
    return StageFailure("execute", "tool_error", f"exit {result.exit_code}: {err[0]}")


def _parse(tool: ToolSpec, result: ExecResult, args: dict[str, str]) -> object:
    parser, text = tool.returns.parser, result.stdout
    try:
        if parser == "file":
            return args[tool.returns.from_param or ""]
        if parser == "int":
            return int(text.strip())
        if parser == "number":
            return float(text.strip())
        if parser == "json":
            return json.loads(text)
        if parser == "lines":
            return text.splitlines()
        return text.rstrip("\n")
    except ValueError as exc:
        raise StageFailure("execute", "tool_error",
                           f"{tool.name}: output does not parse as {parser}: {exc}") from exc


def _check_not_degenerate(sandbox: Sandbox, tool: ToolSpec, output: object) -> None:
    """Reject empty or trivial outputs; a ``file.*`` output is read back and must hold lines
    (a CSV a header and a row).  Other ``parser: file`` outputs (a branch, a table) name
    entries the verifier checks and are not files to read."""
    if tool.returns.parser == "file" and not type_satisfies(tool.returns.type, "file"):
        return
    if tool.returns.parser == "file":
        lines = [ln for ln in sandbox.read_file(str(output)).decode(errors="replace").splitlines()
                 if ln.strip()]
        minimum = 2 if type_satisfies(tool.returns.type, "file.text.csv") else 1
        if len(lines) < minimum:
            raise StageFailure("execute", "degenerate", f"{tool.name} wrote no content to {output}")
    elif output in (0, 0.0, "", [], None):
        raise StageFailure("execute", "degenerate", f"{tool.name} returned {output!r}")


def _resolve(step: Step, tool: ToolSpec, candidate: Candidate, sandbox: Sandbox, eco: Ecosystem,
             outputs: dict[str, object]) -> dict[str, str]:
    args: dict[str, str] = {}
    for p in tool.params:
        b = step.bind[p.name]
        if b.kind == "step":
            args[p.name] = str(outputs[b.step or ""])
        elif b.kind in ("state", "literal"):
            args[p.name] = str(b.value)
    for p in tool.params:
        b = step.bind[p.name]
        if b.kind != "sample":
            continue
        rng = random.Random(f"{candidate.seed}:{step.id}:{p.name}")
        content: bytes | dict
        if b.of is None:
            content = probe(sandbox, eco)
        else:
            try:
                content = sandbox.read_file(args[b.of])
            except FileNotFoundError as exc:
                raise StageFailure("execute", "environment",
                                   f"{args[b.of]} does not exist") from exc
        context = {w: args[w] for w in (p.sample.with_ if p.sample else [])}
        try:
            args[p.name] = eco.sample(b.facet or "", content, rng, **context)
        except (LookupError, ValueError) as exc:
            raise StageFailure("execute", "binding", f"{tool.name}.{p.name}: {exc}") from exc
    return {p.name: args[p.name] for p in tool.params}


TRUNCATABLE = ("binding", "degenerate")


Repairer = Callable[[RepairRequest], RepairProposal | None]


def _run_step(sandbox: Sandbox, eco: Ecosystem, candidate: Candidate, step: Step,
              outputs: dict[str, object], override: dict[str, str] | None = None) -> StepTrace:
    tool = eco.spec.tool(step.tool)
    args = {**_resolve(step, tool, candidate, sandbox, eco, outputs), **(override or {})}
    command = render_command(tool, args)
    result = sandbox.exec(["bash", "-c", command], timeout=tool.timeout_s)
    failure = _classify(result)
    if failure:
        failure.detail = f"{tool.name}: {failure.detail}"
        failure.call = RepairRequest(
            tool=tool.json_schema(), args=args, command=command, exit_code=result.exit_code,
            stderr=result.stderr, stdout=result.stdout, category=failure.reason)
        raise failure
    output = _parse(tool, result, args)
    _check_not_degenerate(sandbox, tool, output)
    if tool.ambiguity_check:
        check = sandbox.exec(["bash", "-c", _SHELL.from_string(tool.ambiguity_check)
                              .render(**args).strip()], timeout=tool.timeout_s)
        if check.exit_code != 0:
            raise StageFailure("execute", "ambiguous",
                               f"{tool.name}: {(check.stdout + check.stderr).strip()[-200:]}")
    return StepTrace(step_id=step.id, tool=tool.name, args=args, command=command,
                     observation=Observation(**result.model_dump()), output=output,
                     output_type=tool.returns.type)


def _replay(sandbox: Sandbox, initial: Snapshot, steps: list[StepTrace]) -> None:
    """Restore ``initial`` and re-run the kept steps' exact commands; their exit codes and
    output must match what was recorded (normalized), else the trace is nondeterministic."""
    sandbox.restore(initial)
    for st in steps:
        again = sandbox.exec(["bash", "-c", st.command], timeout=STEP_TIMEOUT_S)
        if (again.exit_code, normalize(again.stdout)) != (st.observation.exit_code,
                                                          normalize(st.observation.stdout)):
            raise StageFailure("execute", "nondeterministic",
                               f"{st.step_id} {st.tool}: replay after repair differs")


def _llm_rebind(sandbox: Sandbox, eco: Ecosystem, candidate: Candidate, step: Step,
                outputs: dict[str, object], failure: StageFailure, repairer: Repairer,
                redo: Callable[[], None]) -> tuple[StepTrace, Repair] | None:
    """Ask the LLM repairer for a new value of one literal argument and re-run the step."""
    call = getattr(failure, "call", None)
    if call is None:
        return None
    rebindable = {name for name, b in step.bind.items() if b.kind != "step"}
    proposal = repairer(call)
    if proposal is None or proposal.action != "rebind" or proposal.param not in rebindable:
        return None
    redo()
    try:
        st = _run_step(sandbox, eco, candidate, step, outputs,
                       {proposal.param: str(proposal.value)})
    except StageFailure:
        redo()
        return None
    return st, Repair(kind="llm_rebind", step_id=step.id, reason=failure.reason,
                      detail=f"{proposal.param}={proposal.value}: {proposal.rationale}"[:300],
                      dropped=[])


def execute_graph(sandbox: Sandbox, eco: Ecosystem, candidate: Candidate,
                  max_repairs: int = 2, initial: Snapshot | None = None,
                  repairer: Repairer | None = None) -> Trace:
    """Run the candidate's graph step by step; the final read step's output is the answer.

    A ``binding`` or ``degenerate`` failure of a step after the first is repaired, up to
    ``max_repairs`` times, by truncating that step and everything that depends on it —
    when a write step already ran, what remains still ends in checkable state.  Steps
    that ran keep their arguments; when the failed step may have written something, the
    sandbox is restored to ``initial`` and the kept steps are replayed and must reproduce
    their recorded output exactly.  With an LLM ``repairer``, a failed step is first offered
    to it: a validated ``rebind`` of a literal argument re-runs only that step.  Other
    failures raise :class:`StageFailure`.
    """
    outputs: dict[str, object] = {}
    steps: list[StepTrace] = []
    repairs: list[Repair] = []
    graph = candidate.graph
    for step in candidate.graph.steps:
        if step not in graph.steps:
            continue  # dropped by an earlier truncation
        try:
            st = _run_step(sandbox, eco, candidate, step, outputs)
        except StageFailure as failure:
            wrote = any(eco.spec.tool(s.tool).effect == "write" for s in steps)
            side_effects = eco.spec.tool(step.tool).effect == "write"

            def redo(kept: list[StepTrace] = steps, dirty: bool = side_effects) -> None:
                if dirty and initial is not None:
                    _replay(sandbox, initial, kept)

            fixed = None
            if repairer is not None and len(repairs) < max_repairs \
                    and failure.reason not in ("timeout", "resource"):
                fixed = _llm_rebind(sandbox, eco, candidate, step, outputs, failure, repairer,
                                    redo)
            if fixed is not None:
                st, repair = fixed
                repairs.append(repair)
                outputs[step.id] = st.output
                steps.append(st)
                continue
            if failure.reason not in TRUNCATABLE or not wrote or len(repairs) >= max_repairs \
                    or (side_effects and initial is None):
                failure.detail = f"{step.id} {failure.detail}"
                raise
            if side_effects and initial is not None:
                _replay(sandbox, initial, steps)
            smaller = graph.without({step.id})
            dropped = [s.id for s in graph.steps if s not in smaller.steps]
            repairs.append(Repair(kind="truncate", step_id=step.id, reason=failure.reason,
                                  detail=failure.detail, dropped=dropped))
            graph = smaller
            continue
        outputs[step.id] = st.output
        steps.append(st)
    answer = None
    if eco.spec.tool(steps[-1].tool).effect == "read":
        answer = answer_text(steps[-1].output)
    return Trace(steps=steps, answer=answer, repairs=repairs)


def answer_text(output: object) -> str:
    """How a read step's parsed output is written to the answer file."""
    if isinstance(output, float):
        return f"{output:.2f}"
    if isinstance(output, list):
        return "\n".join(str(item) for item in output)
    if isinstance(output, dict):
        return json.dumps(output, sort_keys=True)
    return str(output)


def solution_script(trace: Trace, answer_file: str = ANSWER_FILE) -> str:
    """``solve.sh``: the trace's commands in order; a final read step writes the answer file."""
    lines = [
        "#!/usr/bin/env bash",
        "# Reference solution: the commands of the validated trace, in order.",
        "set -euo pipefail",
        'cd "${TASKFACTORY_WORKDIR:-/workspace}"',
    ]
    for i, step in enumerate(trace.steps):
        last = i == len(trace.steps) - 1
        if last and trace.answer is not None:
            lines.append(f"{{ {step.command}; }} > {answer_file}")
        else:
            lines.append(step.command)
    return "\n".join(lines) + "\n"
