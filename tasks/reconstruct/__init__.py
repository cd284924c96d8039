"""The reconstruct kind: write the program behind a workflow, judged on hidden cases.

- ``program``: the reference program ``solution/run.sh DIR`` and its trace;
- ``arguments``: the program's arguments, the values its trace sampled;
- ``choices``: read steps that single out one entry, and the hardcoded control;
- ``cases``: the public and hidden initial states, each with its expected checks;
- ``examples``: the agent's workspace — the public examples, nothing of the hidden ones;
- ``instruction``: the workflow's instruction restated as a program's rule;
- ``trajectories``: the agent inspecting the examples, writing and testing the program.

Imports :mod:`tasks.core`, :mod:`tasks.plan`, :mod:`tasks.rules`, :mod:`tasks.verify`,
:mod:`tasks.execute`, :mod:`tasks.instruct` and :mod:`tasks.trajectories`.
"""

__all__ = ["arguments", "cases", "choices", "examples", "instruction", "program",
           "trajectories"]
