"""The rules several stages check, each in one module (pure except ``discovery``).

- ``grounding``: every value a trajectory uses is visible to the agent when it is used;
- ``shell_names``: the names a shell command uses (the terminal view's grounding);
- ``leaks``: a task must not hand the solver its own answer;
- ``deliverables``: which executed steps a goal-level task asks for;
- ``compose``: a tool's intent phrase rendered with its arguments;
- ``discourse``: a goal-level instruction as short sentences that introduce what its
  items refer back to, and long sentences broken;
- ``readability``: the one counter of sentence length, nesting and repetition, and the
  limits the ``instruct`` stage enforces;
- ``markdown``: code spans, which mark every literal of an instruction;
- ``discovery``: the read-only inspections an agent makes before it needs their values
  (runs them in a sandbox).

Imports only :mod:`tasks.core` of ``tasks/``.
"""

__all__ = ["compose", "deliverables", "discourse", "discovery", "grounding", "leaks",
           "markdown", "readability", "shell_names"]
