"""Execution: a candidate's graph run in its sandbox, with targeted repairs, as a trace.

- ``realize``: an ecosystem seed turned into a live environment in a sandbox; probes and
  state digests;
- ``run_graph``: :func:`~tasks.execute.run_graph.execute_graph`, steps in dependency
  order, handing failures to repair;
- ``steps``: resolve, run and classify one step; replay recorded steps;
- ``repair``: :class:`~tasks.execute.repair.Repairer`, one targeted repair of the failing
  part; ``repair_llm``: the optional LLM repair proposal;
- private: ``substitute`` (type-compatible replacement tools), ``purpose`` (does a write
  step do work?), ``normalize`` (observations made comparable).

Imports :mod:`tasks.core`, :mod:`tasks.plan`, :mod:`tasks.rules` and :mod:`tasks.verify`.
"""

__all__ = ["realize", "repair", "repair_llm", "run_graph", "steps"]
