"""A reconstruct task's program: ``solution/run.sh DIR``, the workflow behind the task.

The reference program is the validated trace's commands in order (:func:`program_script`),
run in the workspace it is given instead of the sandbox's, with the values the trace
sampled taken as its arguments where its commands take them as one word
(:func:`reference_program`): every path it reads is of the ecosystem's layout, so the same
script serves every initial state of that layout.
The reference ``solve.sh`` installs it at :data:`PROGRAM` (:func:`installer`).  The gate's
memorizer installs a program that copies a public example's expected output over the
workspace it is given (:func:`memorizer_program`).
"""

from __future__ import annotations

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.trace import StepTrace, Trace
from tasks.core.commands import ANSWER_FILE, shell_script, solution_script
from tasks.reconstruct.arguments import parameterized, program_arguments

PROGRAM = "solution/run.sh"
"""Where the agent's program lives, relative to the agent's workspace."""
EXAMPLES = "examples"
"""Where the public cases are, relative to the agent's workspace: ``<case>/input`` (the
initial state) and ``<case>/expected`` (the state the program must leave)."""
_TARGET = 'cd "${1:?usage: run.sh DIR}"'
_END = "TASKFACTORY_PROGRAM"


def program_script(trace: Trace, answer_file: str = ANSWER_FILE,
                   steps: list[StepTrace] | None = None) -> str:
    """``run.sh``: the trace's commands (or ``steps`` of them), run in the workspace named by
    its first argument."""
    return solution_script(trace, answer_file, steps, enter=_TARGET,
                           comment="Reference program: transforms the workspace DIR given "
                                   "as its argument.")


def program_trace(eco: Ecosystem, graph: WorkflowGraph, trace: Trace) -> Trace:
    """The trace whose commands make the reference program: its sampled values replaced by
    the program's arguments (:mod:`tasks.reconstruct.arguments`)."""
    return parameterized(eco, graph, trace, program_arguments(eco, graph))


def reference_program(eco: Ecosystem, graph: WorkflowGraph, trace: Trace) -> str:
    """``run.sh`` of a reconstruct task."""
    return program_script(program_trace(eco, graph, trace), eco.spec.answer_file)


def installer(program: str) -> str:
    """A ``solve.sh`` that writes ``program`` to :data:`PROGRAM` in the agent's workspace."""
    if _END in program.splitlines():
        raise ValueError(f"a program line is the here-document's end marker {_END!r}")
    return shell_script(f"Reference solution: installs the program at {PROGRAM}.", [
        f"mkdir -p {PROGRAM.rsplit('/', 1)[0]}",
        f"cat > {PROGRAM} <<'{_END}'\n{program.rstrip()}\n{_END}",
        f"chmod +x {PROGRAM}"])


def memorizer_program(case: str) -> str:
    """A program that ignores its input: it copies public case ``case``'s expected state
    over the workspace it is given."""
    return shell_script("Memorizer: copies a public example's expected output.", [
        'here="$(cd "$(dirname "$0")/.." && pwd)"', _TARGET,
        f'cp -a "$here/{EXAMPLES}/{case}/expected/." .'], enter=None)
