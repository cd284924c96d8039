"""What an agent's tool calls do in a task's sandbox, in either action space.

- ``terminal``: the one ``bash`` tool; its ``command`` runs under ``bash -c`` in the
  workdir, as typed.
- ``function``: the ecosystem's tools, discovery tools and describers, each call rendered
  into its command template exactly as execution renders a step (every argument
  shell-quoted, under the tools' shell options), plus ``write_answer`` for a task that
  ends in an answer.  A call must give every parameter of the tool and nothing else.

The tools offered are the ones the task's trajectories show (:func:`tasks.trajectories.render.
view_tools`); observations are rendered as trajectories render them
(:func:`tasks.trajectories.render.observation_text`), so a rollout reads like a trajectory.
"""

from __future__ import annotations

from environments.ecosystems import Ecosystem
from environments.sandbox import ExecResult, Sandbox
from schemas.ecosystem import Describer, Discovery, ToolSpec
from schemas.records import ActionSpace
from schemas.trace import Observation, Trace
from tasks.core.commands import render_shell, shell_argv
from tasks.rollouts.agent_loop import MalformedCall
from tasks.rules.grounding import SHELL_TOOL, value_text
from tasks.trajectories.render import NO_OUTPUT, observation_text, view_tools

ANSWER_TOOL = "write_answer"


def _observed(done: ExecResult) -> str:
    return observation_text(Observation(
        exit_code=done.exit_code, stdout=done.stdout, stderr=done.stderr,
        duration_s=done.duration_s, timed_out=done.timed_out, truncated=done.truncated))


class SandboxActions:
    """The :class:`tasks.rollouts.agent_loop.Actions` of one task in one sandbox."""

    def __init__(self, sandbox: Sandbox, eco: Ecosystem, trace: Trace,
                 action_space: ActionSpace) -> None:
        self.sandbox, self.eco, self.action_space = sandbox, eco, action_space
        self.tools = view_tools(eco, trace, action_space)
        self._names = {t["function"]["name"] for t in self.tools}

    def run(self, name: str, arguments: dict, timeout: float) -> tuple[str, bool]:
        if name not in self._names:
            raise MalformedCall(f"no tool named {name!r}; the tools are "
                                f"{', '.join(sorted(self._names))}")
        if name == SHELL_TOOL and self.action_space == "terminal":
            command = self._args(["command"], arguments, name)["command"]
            done = self.sandbox.exec(["bash", "-c", command], timeout=timeout)
        elif name == ANSWER_TOOL:
            value = self._args(["value"], arguments, name)["value"]
            self.sandbox.write_files({self.eco.spec.answer_file: (value + "\n").encode()})
            return NO_OUTPUT, False
        else:
            spec = self._spec(name)
            args = self._args([p.name for p in spec.params], arguments, name)
            done = self.sandbox.exec(shell_argv(render_shell(spec.command, args)),
                                     timeout=timeout)
        return _observed(done), done.timed_out

    def _spec(self, name: str) -> ToolSpec | Discovery | Describer:
        spec = self.eco.spec
        for tool in spec.tools:
            if tool.name == name:
                return tool
        return spec.discovery_tool(name)

    @staticmethod
    def _args(params: list[str], arguments: dict, name: str) -> dict[str, str]:
        missing = [p for p in params if p not in arguments]
        extra = sorted(set(arguments) - set(params))
        if missing or extra:
            raise MalformedCall(f"{name}: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unknown {', '.join(extra)}"] if extra else [])))
        bad = [p for p in params if isinstance(arguments[p], dict | list | bool)
               or arguments[p] is None]
        if bad:
            raise MalformedCall(f"{name}: {', '.join(bad)} must be a string or a number")
        return {p: value_text(arguments[p]) for p in params}
