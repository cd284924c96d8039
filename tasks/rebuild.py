"""A task's environment rebuilt from its row: the ecosystem's image (docker) with the
trace's packages; each sandbox opened is realized by :class:`tasks.realize.LiveEnvironment`
from the seed, the task's fault and the trace's additions.  ``check-harbor``'s identity
check and ``solve`` both start from it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from environments.docker.config import DockerConfig
from environments.docker.images import ecosystem_image
from environments.registry import make_provider
from tasks.harbor.environment import base_image
from tasks.harbor.source import ExportTask
from tasks.realize import OpenSandbox


@contextmanager
def fresh_environments(task: ExportTask, run: str) -> Iterator[OpenSandbox]:
    """Opens sandboxes of the task's environment image, labelled with ``run``; the run's
    sandboxes are closed and reaped on exit."""
    config = ecosystem_image(task.eco, DockerConfig(image=base_image(task.row)),
                             tuple(task.trace.environment.packages))
    provider = make_provider(config, run)
    try:
        yield lambda _packages: provider.sandbox()
    finally:
        provider.close()
        provider.reap(run)
