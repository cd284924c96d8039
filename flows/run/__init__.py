"""What a factory run uses around the pipeline: admission, limits, candidates' wiring.

- ``candidate``: :func:`~flows.run.candidate.build_candidate`, the body of the
  per-candidate Prefect task (resolves what :mod:`tasks.pipeline` takes, runs it);
- ``admission``, ``limits``: when a candidate may start (``workers`` places, the server's
  ``sandbox`` and ``llm`` global concurrency limits);
- ``providers``: one sandbox provider per (backend config, run id) per process;
- ``runners``: the task runners (a thread pool, or a Dask cluster);
- ``infrastructure``: engine failures told apart from task outcomes and retried;
- ``planned``, ``progress``, ``summary``, ``ui``, ``heap``: the planned candidates, the
  progress line and artifact, the run's summary, names and tags in the Prefect UI, the C
  heap handed back to the OS.

Imports :mod:`tasks` and :mod:`environments`; nothing of :mod:`flows.commands`.
"""

__all__ = ["admission", "candidate", "heap", "infrastructure", "limits", "planned",
           "progress", "providers", "runners", "summary", "ui"]
