"""Trajectories: SFT samples rendered from a validated trace.

The ``function`` action space exposes the ecosystem's tools as JSON-schema functions
(plus ``write_answer`` for tasks that end in an answer).  In ``masked`` supervision,
assistant tool calls and the final message are trained; everything else is context.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from environments.ecosystems import Ecosystem
from schemas.records import FunctionCall, Message, ToolCall, TrajectoryRow
from schemas.trace import Observation, Trace

OBSERVATION_CAP = 4000
SYSTEM_PROMPT = (
    "You operate a Linux workspace through the provided tools. Work in the current "
    "directory, call one tool at a time, and read each result before the next call."
)
WRITE_ANSWER = {
    "type": "function",
    "function": {
        "name": "write_answer",
        "description": "Write the final answer to answer.txt in the workspace.",
        "parameters": {"type": "object",
                       "properties": {"value": {"type": "string",
                                                "description": "The answer, on one line."}},
                       "required": ["value"]},
    },
}


def observation_text(obs: Observation, cap: int = OBSERVATION_CAP) -> str:
    """What the agent sees of a command's result, truncated (tail kept, marked) past ``cap``."""
    text = obs.stdout if obs.stdout else "(no output)"
    if obs.stderr.strip():
        text += f"\n[stderr]\n{obs.stderr}"
    if obs.exit_code != 0:
        text += f"\n[exit code {obs.exit_code}]"
    if len(text) > cap or obs.truncated:
        text = f"[output truncated to the last {cap} characters]\n" + text[-cap:]
    return text


def _assistant(call_id: str, name: str, args: dict, reasoning: str) -> Message:
    return Message(role="assistant", content="", reasoning_content=reasoning,
                   tool_calls=[ToolCall(id=call_id, function=FunctionCall(
                       name=name, arguments=json.dumps(args, sort_keys=True)))],
                   train=True, weight=1)


def render_trajectory(eco: Ecosystem, task_id: str, run_id: str, instruction: str,
                      trace: Trace) -> TrajectoryRow:
    """One ``function`` / ``masked`` trajectory for a validated task."""
    messages = [Message(role="system", content=SYSTEM_PROMPT),
                Message(role="user", content=instruction)]
    for i, st in enumerate(trace.steps, start=1):
        tool = eco.spec.tool(st.tool)
        call_id = f"call_{i}"
        why = f"To get {tool.description[0].lower() + tool.description[1:].rstrip('.')}, " \
              f"I call {tool.name} with {', '.join(f'{k}={v}' for k, v in st.args.items())}."
        messages.append(_assistant(call_id, tool.name, st.args, why))
        messages.append(Message(role="tool", tool_call_id=call_id, name=tool.name,
                                content=observation_text(st.observation)))
    tools = [t.json_schema() for t in eco.spec.tools]
    if trace.answer is not None:
        call_id = f"call_{len(trace.steps) + 1}"
        messages.append(_assistant(call_id, "write_answer", {"value": trace.answer},
                                   "The last result is the answer; I save it to answer.txt."))
        messages.append(Message(role="tool", tool_call_id=call_id, name="write_answer",
                                content="(no output)"))
        tools.append(WRITE_ANSWER)
    final = "Done. " + (f"The answer is {trace.answer}." if trace.answer is not None
                        else "The requested files are in place.")
    messages.append(Message(role="assistant", content=final, train=True, weight=1))
    tid = hashlib.sha256(f"{task_id}:function:masked".encode()).hexdigest()[:20]
    return TrajectoryRow(
        trajectory_id=tid, task_id=task_id, run_id=run_id, messages=messages,
        tools=json.dumps(tools, sort_keys=True), supervision="masked", action_space="function",
        reward=1.0, n_turns=sum(m.role == "assistant" for m in messages),
        created_at=datetime.now(UTC))
