"""The pipeline's stages, in packages by stage and layer; a package imports only those
listed before it (``tests/unit/test_layout.py`` checks the order):

1. :mod:`~tasks.core` — failures, shell commands, the LLM client: what every stage shares;
2. :mod:`~tasks.plan` — the run's mix and seeded workflow graphs (pure);
   :mod:`~tasks.rules` — what several stages check (grounding, leaks, deliverables, shell
   names); :mod:`~tasks.verify` — checks from probe deltas, the verifier script;
3. :mod:`~tasks.execute` — a graph run in its sandbox, with targeted repairs;
   :mod:`~tasks.instruct` — the instruction derived from the trace;
4. :mod:`~tasks.trajectories` — SFT samples from the validated trace;
5. :mod:`~tasks.reconstruct` — the reconstruct kind: program, cases, examples;
6. :mod:`~tasks.gate` — the controls a verifier must tell apart, and the gate;
7. :mod:`~tasks.stages` — the stages as the pipeline runs them, one module each;
8. :mod:`~tasks.pipeline` — the stage order (:data:`~tasks.pipeline.PIPELINE`) and its loop;
9. :mod:`~tasks.dataset` — Parquet shards, the manifest, queries and reports;
10. :mod:`~tasks.exports` (Harbor, SFT, ATIF) and :mod:`~tasks.rollouts`, which consume
    the dataset.

``templates/`` holds the instruction and verifier templates (their hash is in every row's
provenance).  Nothing here imports :mod:`flows`; a package's ``__all__`` names the modules
other packages may import.
"""
