"""The conformance suite of an ecosystem, built-in or a user's folder, as
``taskfactory check-ecosystem`` and the test suite run it.

- ``exercise``: :class:`~tasks.conformance.exercise.Exercise` runs every tool once in one
  sandbox (planned by the real planner), recording each write's probe delta, each sampled
  value with what it was drawn from, and each alternative command's result;
- ``checks``: the checks (:class:`~tasks.conformance.checks.Finding`, each naming the
  checklist section of ``docs/ecosystem-reference.md`` that fixes it);
- ``card``: the report card, what passes and what is missing per task kind and for
  tasks that need observation.

Imports :mod:`tasks.core`, :mod:`tasks.plan` and :mod:`tasks.execute`.
"""

__all__ = ["card", "checks", "exercise"]
