"""Prefect wiring and the command line: the top of the house (imports :mod:`tasks`,
:mod:`environments` and :mod:`schemas`; nothing imports it).

- ``factory``: the ``taskfactory`` flow (plan, open the run on the dataset, submit,
  consume in order, finish) and :func:`~flows.factory.run_factory`; the deployment entry
  point ``flows.factory:factory``;
- ``solve``: the ``taskfactory-solve`` flow (entry point ``flows.solve:solve``);
- ``settings``, ``solve_settings``, ``parameters``: the flows' settings models and the
  settings a run actually uses;
- ``cli``: the ``taskfactory`` command (``flows.cli:main``, ``python -m flows.cli``);
- ``run/``: what a factory run uses around the pipeline (the candidate's wiring,
  admission, limits, providers, runners, progress, summary, the Prefect UI);
- ``commands/``: the other subcommands, argument types, usage errors, the temporary
  Prefect API server.
"""
