"""Trajectories of a reconstruct task: the agent inspects the examples, writes the program
and tests it on every public example, in a sandbox laid out as its workspace.

The work, in order: the examples' files listed (``find``, git's folders aside); each
public example's arguments (``cat examples/<case>/args.json``); the trace's discoveries
(the ecosystem's own read commands, :mod:`tasks.rules.discovery`) run in the first example (the
candidate's own seed): those of the first step in its input, those of later steps, which
may read what earlier steps made, in its expected folder; what each example's work
changed (:func:`diff_command`: its input and expected folders, and in a git workspace
their refs); the program written at :data:`tasks.reconstruct.program.PROGRAM` (the task's reference
program); then on each public example a copy of its input, the program run on it with the
example's arguments and the copy compared with the expected folder.  Every command
really runs (:func:`run_work`): the observations are what it printed.

Both action spaces come from the one run: ``terminal`` (one ``bash`` tool; the program is
written with a here-document) and ``function`` (``bash`` plus ``write_file``).  A test run
whose comparison fails rejects the task (``trajectories/examples_differ``); the views are
grounding-checked (``trajectories/ungrounded``) by
:func:`tasks.trajectories.render.trajectory_rows`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from environments.sandbox import Sandbox
from schemas.records import ActionSpace, Message, TrajectoryRow
from schemas.trace import Observation, Trace
from tasks.core.failures import StageFailure
from tasks.reconstruct.cases import PROGRAM_TIMEOUT_S, Case
from tasks.reconstruct.examples import ARGS, example_files, write_examples
from tasks.reconstruct.program import EXAMPLES, PROGRAM
from tasks.rules.grounding import SHELL_TOOL, WRITE_FILE, checked_values
from tasks.trajectories.render import (
    ACTION_SPACES,
    BASH,
    SYSTEM_PROMPTS,
    View,
    call_message,
    observation_text,
    trajectory_rows,
)

COMMAND_TIMEOUT_S = 60.0 + PROGRAM_TIMEOUT_S
"""How long one command may run (a test run runs the program)."""
_HEREDOC_END = "PROGRAM_END"
WRITE_FILE_TOOL = {
    "type": "function",
    "function": {
        "name": WRITE_FILE,
        "description": ("Write a text file in the workspace (its folders are created), "
                        "replacing it if it exists."),
        "parameters": {"type": "object",
                       "properties": {"path": {"type": "string",
                                               "description": "The file's relative path."},
                                      "content": {"type": "string",
                                                  "description": "The file's content."}},
                       "required": ["path", "content"]},
    },
}


@dataclass(frozen=True)
class Action:
    """One call of the agent's work: the reasoning before it, the terminal command, the
    function view's call (tool and arguments) and what the command printed."""

    reasoning: str
    command: str
    tool: str
    args: dict[str, object]
    observation: Observation | None = None


def _bash(reasoning: str, command: str) -> Action:
    return Action(reasoning, command, SHELL_TOOL, {"command": command})


def _run_dir(case: Case) -> str:
    return f"/tmp/run-{case.name}"


def diff_command(left: str, right: str, git: bool, then: str = "&&") -> str:
    """Compares folder ``left`` with ``right``: every file (git's folder aside) and, in a
    git workspace, every ref's tree and subject (commit hashes depend on when the commits
    were made); ``then`` joins the two (``;`` shows both even when files differ)."""
    command = f"diff -r --exclude=.git {left} {right}"
    if git:
        refs = "for-each-ref --format='%(refname) %(tree) %(subject)'"
        command += f" {then} diff <(git -C {left} {refs}) <(git -C {right} {refs})"
    return command


def plan_work(trace: Trace, cases: list[Case], program: str, git: bool) -> list[Action]:
    """The agent's calls, before they run (see the module doc)."""
    public = [c for c in cases if c.public]
    actions = [_bash("First I list the examples' files to see how they are laid out.",
                     f"find {EXAMPLES} -name .git -prune -o -type f -print | LC_ALL=C sort")]
    actions += [_bash(f"The arguments example {c.name} was run with.",
                      f"cat {EXAMPLES}/{c.name}/{ARGS}") for c in public]
    seen: set[str] = set()
    for i, st in enumerate(trace.steps):
        part = "input" if i == 0 else "expected"
        for d in st.discoveries:
            if d.command not in seen:
                seen.add(d.command)
                actions.append(_bash(f"I inspect the first example's {part} ({d.name}).",
                                     f"cd {EXAMPLES}/{public[0].name}/{part} && "
                                     f"{d.command}"))
    actions += [_bash(f"What the work changed in example {c.name}.",
                      diff_command(f"{EXAMPLES}/{c.name}/input", f"{EXAMPLES}/{c.name}/expected",
                                   git, then=";")) for c in public]
    folder = PROGRAM.rsplit("/", 1)[0]
    write = (f"mkdir -p {folder} && cat > {PROGRAM} <<'{_HEREDOC_END}'\n{program.rstrip()}\n"
             f"{_HEREDOC_END}")
    actions.append(Action("Now I write the program that does this to any workspace DIR.",
                          write, WRITE_FILE, {"path": PROGRAM, "content": program}))
    for c in public:
        run = _run_dir(c)
        args = " ".join(shlex.quote(a) for a in c.args)
        command = (f"rm -rf {run} && cp -a {EXAMPLES}/{c.name}/input {run} && "
                   f"bash {PROGRAM} {run}{' ' + args if args else ''} && "
                   f"{diff_command(run, f'{EXAMPLES}/{c.name}/expected', git)} && "
                   "echo 'same as expected'")
        actions.append(_bash(f"I test the program on a copy of example {c.name}'s input and "
                             "compare the result with its expected folder.", command))
    return actions


def run_work(sandbox: Sandbox, cases: list[Case], actions: list[Action]) -> list[Action]:
    """Lay the public examples out in the sandbox's workspace and run every action's
    command there in order; the actions with their observations."""
    write_examples(sandbox, cases)
    done = []
    for a in actions:
        result = sandbox.exec(["bash", "-c", a.command], timeout=COMMAND_TIMEOUT_S)
        done.append(Action(a.reasoning, a.command, a.tool, a.args,
                           Observation(**result.model_dump())))
    return done


def _view(space: ActionSpace, instruction: str, actions: list[Action], final: str) -> View:
    tools = [BASH] if space == "terminal" else [BASH, WRITE_FILE_TOOL]
    messages = [Message(role="system", content=SYSTEM_PROMPTS[space]),
                Message(role="user", content=instruction)]
    values: list[dict[str, object]] = []
    for turn, a in enumerate(actions, start=1):
        assert a.observation is not None
        name, args = ((SHELL_TOOL, {"command": a.command}) if space == "terminal"
                      else (a.tool, a.args))
        messages.append(call_message(turn, name, args, a.reasoning))
        messages.append(Message(role="tool", tool_call_id=f"call_{turn}", name=name,
                                content=observation_text(a.observation)))
        values.append(checked_values(a.tool, a.args))
    messages.append(Message(role="assistant", content=final,
                            reasoning_content="The program reproduces every example."))
    return (space, messages, tools, values if space == "terminal" else None)


def render_reconstruct_trajectories(sandbox: Sandbox, task_id: str, run_id: str,
                                    instruction: str, trace: Trace, cases: list[Case],
                                    program: str) -> list[TrajectoryRow]:
    """Six rows (two views x three supervision modes) of the agent's work, run in
    ``sandbox`` (its workspace is emptied and laid out as the agent's)."""
    git = any("/.git/" in path for path in example_files(cases))
    actions = run_work(sandbox, cases, plan_work(trace, cases, program, git))
    public = [c for c in cases if c.public]
    for c, a in zip(public, actions[-len(public):], strict=True):
        assert a.observation is not None
        if a.observation.exit_code != 0:
            raise StageFailure("trajectories", "examples_differ",
                               f"on example {c.name} the program's run ends with exit "
                               f"{a.observation.exit_code}: "
                               f"{observation_text(a.observation, 300)!r}")
    final = (f"The program is at `{PROGRAM}`. On every example it turns a copy of the input "
             "into the expected folder.")
    return trajectory_rows(task_id, run_id, [_view(space, instruction, actions, final)
                                             for space in ACTION_SPACES])


def program_in(row: TrajectoryRow) -> str | None:
    """The program a trajectory writes (its ``write_file`` content or here-document)."""
    for m in row.messages:
        for c in m.tool_calls or []:
            args = json.loads(c.function.arguments)
            if c.function.name == WRITE_FILE:
                return str(args["content"])
            marker = f"<<'{_HEREDOC_END}'\n"
            if marker in args.get("command", ""):
                return args["command"].split(marker, 1)[1].rsplit(f"\n{_HEREDOC_END}", 1)[0]
    return None
