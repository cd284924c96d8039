"""Steps: resolve, run and check one workflow step in a sandbox; replay recorded steps.

Arguments resolve in dependency order: upstream outputs, state values, planner literals,
and samples drawn from the sandbox's current files with an RNG seeded per candidate, step
and draw, so a rerun resolves the same values.  A failing step raises
:class:`StageFailure` with its category from the taxonomy; :func:`execute_graph` hands
it to the targeted repairs of :mod:`tasks.execute.repair`.
"""

from __future__ import annotations

import json
import posixpath
import random
import re
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import ExecResult, Sandbox, Snapshot
from schemas.ecosystem import ToolSpec, type_satisfies
from schemas.graph import Candidate, Step
from schemas.records import StageName
from schemas.trace import Observation, StepTrace
from tasks.core.commands import (
    answer_text,
    failure_summary,
    render_command,
    render_shell,
    shell_argv,
)
from tasks.core.failures import StageFailure, user_code_failure
from tasks.execute.normalize import normalize
from tasks.execute.realize import probe
from tasks.execute.repair_llm import RepairRequest
from tasks.rules.discovery import DISCOVERY_TIMEOUT_S, run_discoveries
from tasks.rules.leaks import leaked_in

_REJECTED_ARGUMENT = re.compile(
    r"invalid (number|argument|option|value)|unrecognized option|illegal option|"
    r"not a valid|bad argument|invalid literal|expects? (an? )?(integer|number)", re.I)
_OUT_OF_RESOURCES = ("Cannot allocate memory", "Resource temporarily unavailable",
                     "MemoryError")
_MISSING_COMMAND = re.compile(r"([\w.+-]+): (?:command )?not found")
_MISSING_PATH = re.compile(r"No such file or directory: '([^']+)'|"
                           r"([^\s:'\"]+): No such file or directory")


def classify(result: ExecResult) -> StageFailure | None:
    """The failure category of a finished command, or None when it succeeded.

    An ``environment`` failure carries ``missing``: ``("command", name)`` or
    ``("path", path)`` when stderr names what was missing."""
    if result.exit_code == 0 and not result.timed_out:
        return None
    summary = failure_summary(result.exit_code, result.stderr)
    if any(sign in result.stderr for sign in _OUT_OF_RESOURCES):  # a limit bit, even if it
        return StageFailure("execute", "resource", summary)       # then ran out of time
    if result.timed_out:
        return StageFailure("execute", "timeout", "step exceeded its time limit")
    if result.exit_code in (126, 127) or "command not found" in result.stderr:
        found = _MISSING_COMMAND.search(result.stderr)
        return StageFailure("execute", "environment", summary,
                            missing=("command", found.group(1)) if found else None)
    if result.exit_code == 137:
        return StageFailure("execute", "resource", summary)
    if "No such file" in result.stderr:
        found = _MISSING_PATH.search(result.stderr)
        path = (found.group(1) or found.group(2)) if found else None
        return StageFailure("execute", "environment", summary,
                            missing=("path", path) if path else None)
    if _REJECTED_ARGUMENT.search(result.stderr):
        return StageFailure("execute", "binding", summary)
    return StageFailure("execute", "tool_error", summary)


def _parse(tool: ToolSpec, result: ExecResult, args: dict[str, str]) -> object:
    """The step's output: what it printed, read with its parser; for a write, the key it
    changes (its ``from_param`` argument: ``parser: file`` takes it as it is), whatever
    it printed."""
    parser, text = tool.returns.parser, result.stdout
    if tool.effect == "write":
        text = str(args[tool.returns.from_param or ""])
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


def _resolve(step: Step, candidate: Candidate, sandbox: Sandbox, eco: Ecosystem,
             outputs: dict[str, object], state: dict | None = None) -> dict[str, str]:
    tool = eco.spec.tool(step.tool)
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
        suffix = f":{b.draw}" if b.draw else ""
        rng = random.Random(f"{candidate.seed}:{step.id}:{p.name}{suffix}")
        content: bytes | dict
        if b.of is None:
            state = state if state is not None else probe(sandbox, eco)
            content = state
        else:
            try:
                content = sandbox.read_file(args[b.of])
            except FileNotFoundError as exc:
                raise StageFailure("execute", "environment", f"{args[b.of]} does not exist",
                                   missing=("path", args[b.of])) from exc
        context = {w: args[w] for w in (p.sample.with_ if p.sample else [])}
        try:
            args[p.name] = eco.sample(b.facet or "", content, rng, **context)
        except UserCodeError as exc:
            raise user_code_failure("execute", exc) from exc
        except (LookupError, ValueError) as exc:
            raise StageFailure("execute", "binding", f"{tool.name}.{p.name}: {exc}") from exc
    return {p.name: args[p.name] for p in tool.params}


@dataclass(frozen=True)
class Known:
    """What the run knows when it runs a step (each optional).

    With ``done`` (the discovery commands run before earlier kept steps), the discoveries
    the step triggers run first, once its arguments are known (:mod:`tasks.rules.discovery`).
    ``shown`` is what the task will already write out when this read's result is its
    answer (the kept steps' phrases): an answer found there is ``degenerate`` (the task
    would hand the solver its answer), so a repair draws the read's arguments again.
    ``state``, when given, is the sandbox's probe state now: samplers draw from it instead
    of a new probe."""

    done: set[str] | None = None
    shown: str = ""
    state: dict | None = None


def run_step(sandbox: Sandbox, eco: Ecosystem, candidate: Candidate, step: Step,
             outputs: dict[str, object], known: Known = Known()) -> StepTrace:
    """Resolve, run, parse and check one step, with what the run ``known``s; raises
    StageFailure (with ``step_args`` and ``call``, what an LLM repairer is shown) when it
    fails."""
    done, shown, state = known.done, known.shown, known.state
    tool = eco.spec.tool(step.tool)
    args = _resolve(step, candidate, sandbox, eco, outputs, state)
    found = [] if done is None else run_discoveries(sandbox, eco, tool, args, done)
    command = render_command(tool, args)
    result = sandbox.exec(shell_argv(command), timeout=tool.timeout_s)
    failure = classify(result)
    if failure:
        failure.detail = f"{tool.name}: {failure.detail}"
        failure.call = RepairRequest(
            tool=tool.json_schema(), args=args, command=command, exit_code=result.exit_code,
            stderr=result.stderr, stdout=result.stdout, category=failure.reason)
        failure.step_args = args
        raise failure
    output = _parse(tool, result, args)
    _check_not_degenerate(sandbox, tool, output)
    if shown and tool.effect == "read" and (where := leaked_in(answer_text(output), shown, [])):
        raise StageFailure("execute", "degenerate",
                           f"{tool.name}: the answer shows in {where} of an earlier step")
    if tool.ambiguity_check:
        check = sandbox.exec(["bash", "-c", render_shell(tool.ambiguity_check, args)],
                             timeout=tool.timeout_s)
        if check.exit_code != 0:
            raise StageFailure("execute", "ambiguous",
                               f"{tool.name}: {(check.stdout + check.stderr).strip()[-200:]}")
    return StepTrace(step_id=step.id, tool=tool.name, args=args, command=command,
                     observation=Observation(**result.model_dump()), output=output,
                     output_type=tool.returns.type, discoveries=found)


def same_observation(a: Observation | ExecResult, b: Observation | ExecResult) -> bool:
    """Two runs of one command agree: exit code and normalized stdout."""
    return (a.exit_code, normalize(a.stdout)) == (b.exit_code, normalize(b.stdout))


def replay(sandbox: Sandbox, eco: Ecosystem, initial: Snapshot, steps: list[StepTrace],
           stage: StageName = "execute", rediscover: bool = False) -> list[StepTrace]:
    """Restore ``initial`` and re-run the steps' exact commands; each must reproduce its
    recorded observation (normalized), else StageFailure ``nondeterministic``.  With
    ``rediscover`` (the environment changed under the steps, e.g. a provided file), each
    step's discoveries run again first and the returned steps carry what they show now."""
    sandbox.restore(initial)
    out = []
    for st in steps:
        if rediscover and st.discoveries:
            st = st.model_copy(update={"discoveries": [d.model_copy(update={
                "observation": Observation(**sandbox.exec(
                    ["bash", "-c", d.command], timeout=DISCOVERY_TIMEOUT_S).model_dump())})
                for d in st.discoveries]})
        out.append(st)
        again = sandbox.exec(shell_argv(st.command), timeout=eco.spec.tool(st.tool).timeout_s)
        if not same_observation(again, st.observation):
            raise StageFailure(stage, "nondeterministic",
                               f"{st.step_id} {st.tool}: a second execution prints something "
                               "else or exits differently")
    return out


def relative(sandbox: Sandbox, path: str) -> str:
    """``path`` relative to the sandbox workdir (absolute paths under it are shortened)."""
    if posixpath.isabs(path):
        return posixpath.relpath(path, sandbox.workdir)
    return posixpath.normpath(path)
