"""Harbor task folders: export the dataset's accepted tasks, and check exported folders
the way Harbor runs them.

- :mod:`~tasks.exports.harbor.source` — the tasks, read from a dataset with their ecosystems;
- :mod:`~tasks.exports.harbor.export` — one task as a folder (``task.toml``, instruction,
  solution, tests) and writing folders in place;
- :mod:`~tasks.exports.harbor.environment` — its ``environment/``: the Dockerfile and context that
  rebuild the environment the factory validated (a reconstruct task's: the agent's
  workspace of public examples; its hidden cases are only in ``tests/``);
- :mod:`~tasks.exports.harbor.toml` — the TOML writer ``task.toml`` needs;
- the containers of an exported image, driven as Harbor does, are the engine's second driver
  (:mod:`environments.docker.harbor_container`);
- :mod:`~tasks.exports.harbor.identity` — is the rebuilt environment the factory's?
- :mod:`~tasks.exports.harbor.check` — build each folder's image and run the gate's controls
  (:mod:`tasks.gate.controls`) in its containers.

Exporting imports neither Prefect nor Docker, except for a reconstruct task: its public
examples are made afresh in a sandbox of its environment (:mod:`tasks.exports.harbor.rebuild`).
"""

__all__ = ["HarborError", "check", "export", "rebuild", "source"]


class HarborError(ValueError):
    """Bad input to an export or a check: a task that cannot be exported as it is, a
    dataset or folder that is not there; the message names the problem and the fix."""
