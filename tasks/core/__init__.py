"""What every stage shares, and nothing stage-specific: the bottom of ``tasks/``.

- ``failures``: the failure taxonomy (:data:`~tasks.core.failures.Reason`) and
  :class:`~tasks.core.failures.StageFailure`, the exception a stage raises to reject its
  candidate;
- ``commands``: shell text — a tool's command with quoted arguments, answers,
  ``solve.sh``;
- ``llm``: the optional JSON-only LLM client (retries, breaker, token budget).

Imports nothing else of ``tasks/``.
"""

__all__ = ["commands", "failures", "llm"]
