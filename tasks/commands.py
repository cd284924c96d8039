"""Shell text: tool commands rendered with quoted arguments, answers, ``solve.sh``.

Every ``{{ expr }}`` of a tool's command template is shell-quoted on render;
``{{ v | sql }}`` renders a SQL string literal for use inside a double-quoted statement
and ``{{ obj | json }}`` a JSON document (both already safe for the shell).
"""

from __future__ import annotations

import json
import shlex

import jinja2

from schemas.ecosystem import ToolSpec
from schemas.trace import StepTrace, Trace

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
                    steps: list[StepTrace] | None = None) -> str:
    """``solve.sh``: the trace's commands in order; a final read step writes the answer file.

    ``steps`` (a prefix of the trace's steps) renders a partial solution: the same script
    stopped early, for the gate's shortcut controls."""
    lines = [
        "#!/usr/bin/env bash",
        "# Reference solution: the commands of the validated trace, in order.",
        "set -euo pipefail",
        'cd "${TASKFACTORY_WORKDIR:-/workspace}"',
    ]
    chosen = trace.steps if steps is None else steps
    for step in chosen:
        if step is trace.steps[-1] and trace.answer is not None:
            lines.append(f"{{ {step.command}; }} > {answer_file}")
        else:
            lines.append(step.command)
    return "\n".join(lines) + "\n"
