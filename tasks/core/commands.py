"""Shell text: tool commands rendered with quoted arguments, answers, ``solve.sh``.

Every ``{{ expr }}`` of a tool's command template is shell-quoted on render;
``{{ v | sql }}`` renders a SQL string literal for use inside a double-quoted statement
and ``{{ obj | json }}`` a JSON document (both already safe for the shell).

Tool commands run under one set of shell options, :data:`SHELL_OPTIONS`, in execution
(:func:`shell_argv`) and in ``solve.sh``: a failing command, a failing stage of a pipeline
(``... | sed``) or an unset variable fails the step, so what passes execution passes the
gate's reference run.  ``solve.sh`` names the line it failed at on stderr
(:func:`solution_failure` reads it back); a failed command is summarized the same way in
both places (:func:`failure_summary`).
"""

from __future__ import annotations

import json
import re
import shlex

import jinja2

from schemas.ecosystem import ToolSpec
from schemas.trace import StepTrace, Trace

ANSWER_FILE = "answer.txt"
SHELL_OPTIONS = "set -euo pipefail"
"""bash's errexit, nounset and pipefail: how every tool command runs."""
FAILED_AT = "solve.sh failed at line"
_ERR_TRAP = f"trap 'echo \"{FAILED_AT} $LINENO with exit $?: $BASH_COMMAND\" >&2' ERR"
_FAILED_LINE = re.compile(rf"{FAILED_AT} (\d+) with exit (\d+): (.*)")


def shell_argv(command: str) -> list[str]:
    """How a tool command runs in a sandbox: bash -c, under :data:`SHELL_OPTIONS`."""
    return ["bash", "-c", f"{SHELL_OPTIONS}\n{command}"]


def failure_summary(exit_code: int, stderr: str) -> str:
    """``exit N: <last line of stderr>``: a failed command, in execution and in the gate."""
    last = stderr.strip().splitlines()[-1:] or [""]
    return f"exit {exit_code}: {last[0]}"


def solution_failure(exit_code: int, stderr: str) -> str:
    """Where a ``solve.sh`` run failed, from the line its ERR trap printed: ``line N
    (`command`) exit N: <the command's last stderr line>``; the plain
    :func:`failure_summary` when no line was named (it did not fail, or was killed)."""
    lines = stderr.strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if found := _FAILED_LINE.fullmatch(lines[i]):
            line, code, command = found.groups()
            own = "\n".join(x for x in lines[:i] if not _FAILED_LINE.fullmatch(x))
            return f"line {line} (`{command}`) {failure_summary(int(code), own)}"
    return failure_summary(exit_code, stderr)


class _Raw(str):
    """Already safe for the shell: rendered without another round of quoting."""


def shell_word(text: str) -> str:
    """``text`` (already a shell word, such as ``"$2"``), rendered as it is in a command."""
    return _Raw(text)


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


def render_shell(template: str, args: dict[str, str]) -> str:
    """``template`` (jinja2) with every argument shell-quoted."""
    return _SHELL.from_string(template).render(**args).strip()


def render_command(tool: ToolSpec, args: dict[str, str]) -> str:
    """The tool's command with every argument shell-quoted."""
    return render_shell(tool.command, args)


def answer_text(output: object) -> str:
    """How a read step's parsed output is written to the answer file."""
    if isinstance(output, float):
        return f"{output:.2f}"
    if isinstance(output, list):
        return "\n".join(str(item) for item in output)
    if isinstance(output, dict):
        return json.dumps(output, sort_keys=True)
    return str(output)


def solution_script(trace: Trace, answer_file: str = ANSWER_FILE,
                    steps: list[StepTrace] | None = None, enter: str | None = None,
                    comment: str = "") -> str:
    """``solve.sh``: the trace's commands in order; a final read step writes the answer file.

    ``steps`` (a prefix of the trace's steps) renders a partial solution: the same script
    stopped early, for the gate's shortcut controls.  ``enter`` (default :data:`WORKDIR`)
    and ``comment`` as :func:`shell_script` takes them."""
    lines = []
    chosen = trace.steps if steps is None else steps
    for step in chosen:
        if step is trace.steps[-1] and trace.answer is not None:
            lines.append(f"{{ {step.command}; }} > {answer_file}")
        else:
            lines.append(step.command)
    return shell_script(comment or "Reference solution: the commands of the validated trace, "
                        "in order.", lines, WORKDIR if enter is None else enter)


WORKDIR = 'cd "${TASKFACTORY_WORKDIR:-/workspace}"'
"""How ``solve.sh`` enters the agent's workdir."""


def shell_script(comment: str, commands: list[str], enter: str | None = WORKDIR) -> str:
    """A script run as ``solve.sh`` is: under :data:`SHELL_OPTIONS`, naming the line it
    fails at, in the workdir (``enter``: the line that enters it, None for none: the
    commands do); ``comment`` is its second line."""
    lines = ["#!/usr/bin/env bash", f"# {comment}", SHELL_OPTIONS, _ERR_TRAP,
             *([enter] if enter else []), *commands]
    return "\n".join(lines) + "\n"
