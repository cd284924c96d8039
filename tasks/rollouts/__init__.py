"""Rollouts: an agent's attempts at the dataset's tasks (``taskfactory solve``).

- ``rollout``: :func:`~tasks.rollouts.rollout.run_attempt`, one attempt in a fresh
  sandbox of the task's initial state, scored by the task's verifier;
- ``agent_loop``: the built-in agent loop on an OpenAI-compatible endpoint, and its
  :class:`~tasks.rollouts.agent_loop.Limits`;
- ``actions`` (private): what the agent's tool calls do, in either action space.

Consumes the pipeline: imports the stage packages and :mod:`tasks.exports.harbor` (a
task's environment rebuilt from its row), never :mod:`tasks.stages` or the pipeline.
"""

__all__ = ["agent_loop", "rollout"]
