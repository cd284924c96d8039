"""Trajectories: SFT samples rendered from a validated trace, two views x three masks.

Action spaces, both from the same trace and the same observations:

- ``function``: the ecosystem's tools as JSON-schema functions, one call per step with
  the step's arguments as a JSON string (typed per the parameter's ``json_type``), plus a
  ``write_answer`` tool for tasks that end in an answer;
- ``terminal``: one ``bash`` tool whose calls are the exact commands that ran; the answer
  is written with ``printf '%s\\n' <answer> > answer.txt`` after the agent has read it
  (the verifier accepts it exactly as it accepts ``solve.sh``'s redirect).

Before a step, both views show the discoveries recorded with it (:mod:`tasks.rules.discovery`):
in ``function`` as calls of the ecosystem's discovery tools, in ``terminal`` as their
commands.  Observations are the same text in both, truncated the same way (tail kept,
marked).
Supervision modes derive from one message list per view: ``masked`` trains assistant
calls and the final answer and carries no reasoning (a per-message flag cannot exclude
part of a message); ``full`` also carries and trains the reasoning; ``actobs`` also
trains the tool observations.  Every view is grounding-checked before rows are made:
a value the agent could not have seen raises ``trajectories/ungrounded``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from environments.ecosystems import Ecosystem
from schemas.ecosystem import Describer, Discovery, ToolSpec
from schemas.graph import WorkflowGraph
from schemas.records import (
    ActionSpace,
    FunctionCall,
    Message,
    Supervision,
    ToolCall,
    TrajectoryRow,
)
from schemas.trace import Observation, Trace
from tasks.core.failures import StageFailure
from tasks.instruct.instruction import Instruction
from tasks.rules.grounding import first_ungrounded, new_names
from tasks.trajectories.reasoning import final_answer, template_reasoning

OBSERVATION_CAP = 4000
ACTION_SPACES: tuple[ActionSpace, ...] = ("function", "terminal")
SUPERVISIONS: tuple[Supervision, ...] = ("masked", "full", "actobs")
NO_OUTPUT = "(no output)"
SYSTEM_PROMPTS = {
    "function": ("You operate a Linux workspace through the provided tools. Work in the "
                 "current directory, call one tool at a time, and read each result before "
                 "the next call."),
    "terminal": ("You operate a Linux workspace through a bash tool: each call runs one "
                 "command in the current directory and returns its output. Run one command "
                 "at a time and read each result before the next."),
}
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": ("Run a bash command in the workspace's current directory; returns "
                        "its stdout, then its stderr and exit code when they are not empty."),
        "parameters": {"type": "object",
                       "properties": {"command": {"type": "string",
                                                  "description": "The command to run."}},
                       "required": ["command"]},
    },
}

Reasoner = Callable[[Sequence[Message], list[dict], dict | None, str], str]
"""(visible prefix, tools, next call or None for the final turn, template text) -> text."""


def write_answer_tool(answer_file: str) -> dict:
    return {"type": "function", "function": {
        "name": "write_answer",
        "description": f"Write the final answer to {answer_file} in the workspace.",
        "parameters": {"type": "object",
                       "properties": {"value": {"type": "string",
                                                "description": "The answer text."}},
                       "required": ["value"]}}}


def observation_text(obs: Observation, cap: int | None = None) -> str:
    """What the agent sees of a command's result.  Past ``cap`` characters (default
    ``OBSERVATION_CAP``) the tail is kept; a first line says what was cut and by whom: the
    sandbox (its output cap kept only the tail of a stream: ``obs.truncated``) and/or this
    renderer (how many characters it cut to keep the last ``cap``)."""
    cap = OBSERVATION_CAP if cap is None else cap
    text = obs.stdout if obs.stdout else NO_OUTPUT
    if obs.stderr.strip():
        text += f"\n[stderr]\n{obs.stderr}"
    if obs.exit_code != 0:
        text += f"\n[exit code {obs.exit_code}]"
    cuts = []
    if obs.truncated:
        cuts.append("the sandbox's output cap kept only the end of the command's output")
    if len(text) > cap:
        cuts.append(f"the trajectory renderer cut the first {len(text) - cap} characters "
                    f"to keep the last {cap}")
    if cuts:
        text = f"[output truncated: {'; then '.join(cuts)}]\n" + text[-cap:]
    return text


def typed_arguments(tool: ToolSpec | Discovery | Describer,
                    args: dict[str, str]) -> dict[str, object]:
    """Arguments as JSON values of the parameters' ``json_type``; a number keeps its text
    (``str(value)`` gives back exactly what ran), else it stays a string."""
    out: dict[str, object] = {}
    for p in tool.params:
        value: object = args[p.name]
        if p.json_type in ("integer", "number"):
            try:
                parsed = json.loads(args[p.name])
            except ValueError:
                parsed = None
            if isinstance(parsed, int | float) and not isinstance(parsed, bool) \
                    and str(parsed) == args[p.name]:
                value = parsed
        out[p.name] = value
    return out


def call_message(turn: int, name: str, args: dict, reasoning: str) -> Message:
    return Message(role="assistant", content="", reasoning_content=reasoning,
                   tool_calls=[ToolCall(id=f"call_{turn}", function=FunctionCall(
                       name=name, arguments=json.dumps(args, sort_keys=True)))])


def _calls(eco: Ecosystem, trace: Trace, action_space: ActionSpace
           ) -> list[tuple[str, dict, dict[str, object], str]]:
    """Per tool call of the view: (tool, arguments, values for the grounding check,
    observation).  Each step's discoveries come just before it."""
    calls: list[tuple[str, dict, dict[str, object], str]] = []
    for st in trace.steps:
        for d in st.discoveries:
            spec = eco.spec.discovery_tool(d.name)
            if action_space == "function":
                args = typed_arguments(spec, d.args)
                calls.append((d.name, args, args, observation_text(d.observation)))
            else:
                calls.append(("bash", {"command": d.command}, dict(d.args),
                              observation_text(d.observation)))
        if action_space == "function":
            args = typed_arguments(eco.spec.tool(st.tool), st.args)
            calls.append((st.tool, args, args, observation_text(st.observation)))
        else:
            calls.append(("bash", {"command": st.command}, dict(st.args),
                          observation_text(st.observation)))
    if trace.answer is not None:
        answer_file = eco.spec.answer_file
        if action_space == "function":
            calls.append(("write_answer", {"value": trace.answer}, {"value": trace.answer},
                          NO_OUTPUT))
        else:
            command = f"printf '%s\\n' {shlex.quote(trace.answer)} > {shlex.quote(answer_file)}"
            calls.append(("bash", {"command": command}, {"value": trace.answer}, NO_OUTPUT))
    return calls


def view_tools(eco: Ecosystem, trace: Trace, action_space: ActionSpace) -> list[dict]:
    """The view's tools: the ecosystem's tools, discovery tools and describers (plus
    ``write_answer`` for an answer) as functions, or the one ``bash`` tool."""
    if action_space != "function":
        return [BASH]
    tools = [t.json_schema() for t in eco.spec.tools]
    tools += [d.json_schema() for d in eco.spec.discovery]
    tools += [d.json_schema() for d in eco.spec.describers]
    if trace.answer is not None:
        tools.append(write_answer_tool(eco.spec.answer_file))
    return tools


def conversation(eco: Ecosystem, graph: WorkflowGraph, instruction: Instruction, trace: Trace,
                 action_space: ActionSpace, seed: int, reasoner: Reasoner | None = None,
                 ) -> tuple[list[Message], list[dict], list[dict[str, object]]]:
    """The view's messages (with reasoning, no loss flags), its tools, and per tool call
    the literal values it uses (for the grounding check)."""
    texts = template_reasoning(eco, graph, trace, instruction.items, action_space, seed,
                               observation_text)
    tools = view_tools(eco, trace, action_space)
    messages = [Message(role="system", content=SYSTEM_PROMPTS[action_space]),
                Message(role="user", content=instruction.text)]
    calls = _calls(eco, trace, action_space)
    for turn, (name, args, _, observed) in enumerate(calls, start=1):
        text = texts[turn - 1]
        if reasoner is not None:
            text = reasoner(messages, tools, {"name": name, "arguments": args}, text)
        messages.append(call_message(turn, name, args, text))
        messages.append(Message(role="tool", tool_call_id=f"call_{turn}", name=name,
                                content=observed))
    text = texts[-1] if reasoner is None else reasoner(messages, tools, None, texts[-1])
    messages.append(Message(role="assistant", reasoning_content=text,
                            content=final_answer(eco, trace, instruction.items, seed)))
    return messages, tools, [values for _, _, values, _ in calls]


def supervise(messages: Sequence[Message], mode: Supervision) -> list[Message]:
    """The loss flags of ``mode``: assistant messages are trained in every mode, tool
    observations in ``actobs`` only; ``masked`` drops the reasoning."""
    out = []
    for m in messages:
        train = m.role == "assistant" or (mode == "actobs" and m.role == "tool")
        update: dict = {"train": train, "weight": int(train)}
        if mode == "masked":
            update["reasoning_content"] = None
        out.append(m.model_copy(update=update))
    return out


def trajectory_id(task_id: str, action_space: str, supervision: str, rendering: str) -> str:
    blob = json.dumps([task_id, action_space, supervision, rendering])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


View = tuple[ActionSpace, list[Message], list[dict], list[dict[str, object]] | None]
"""One rendered view: its action space, messages (with reasoning, no loss flags), tools
and per tool call the values the grounding check looks up (None: the call's arguments)."""


def trajectory_rows(task_id: str, run_id: str, views: Sequence[View],
                    rendering: str = "template") -> list[TrajectoryRow]:
    """Three rows per view (one per supervision mode), every view grounding-checked first:
    the names the agent chose are the first view's (the function view's) in each.  Raises
    ``trajectories/ungrounded`` naming the view and the value."""
    rows = []
    now = datetime.now(UTC)
    chosen: list[list[str]] | None = None
    for space, messages, tools, values in views:
        chosen = new_names(messages, tools) if chosen is None else chosen
        problem = first_ungrounded(messages, tools, values, chosen)
        if problem is not None:
            raise StageFailure("trajectories", "ungrounded", f"{space} view, {problem}")
        tools_json = json.dumps(tools, sort_keys=True)
        n_turns = sum(m.role == "assistant" for m in messages)
        for mode in SUPERVISIONS:
            rows.append(TrajectoryRow(
                trajectory_id=trajectory_id(task_id, space, mode, rendering), task_id=task_id,
                run_id=run_id, messages=supervise(messages, mode), tools=tools_json,
                supervision=mode, action_space=space, reward=1.0, n_turns=n_turns,
                rendering=rendering, created_at=now))
    return rows


def render_trajectories(eco: Ecosystem, graph: WorkflowGraph, task_id: str, run_id: str,
                        instruction: Instruction, trace: Trace, seed: int,
                        reasoner: Reasoner | None = None, rendering: str = "template",
                        ) -> list[TrajectoryRow]:
    """Six rows (two views x three supervision modes), every view grounding-checked."""
    views: list[View] = [(space, *conversation(eco, graph, instruction, trace, space, seed,
                                                reasoner)) for space in ACTION_SPACES]
    return trajectory_rows(task_id, run_id, views, rendering)
