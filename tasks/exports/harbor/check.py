"""Check exported Harbor task folders the way Harbor runs them, with the gate's controls.

For one folder: build the image from ``environment/`` (nothing pulled), then run every
control of :mod:`tasks.gate.controls` that applies to the task, each in a fresh container
(:class:`tasks.exports.harbor.host.ContainerHost`), and compare the environment of the first one
with a fresh factory realization (:mod:`tasks.exports.harbor.identity`).  A folder passes when it
is identical and every control scored as it must: the reference 1 (its ``solve.sh``
exiting 0), every other control 0.  On a reconstruct folder the controls are the gate's
for that kind (:attr:`tasks.exports.harbor.source.ExportTask.controlled`): no program 0, the
reference program 1, the memorizer, the reference program with its choices hard-coded and
the reference program minus its last write 0.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from environments.docker import harbor_container
from environments.docker.harbor_container import (
    ContainerError,
    build_image,
    remove_labelled,
    remove_run,
    sweep_stale,
)
from environments.sandbox import SandboxError
from tasks.core.failures import StageFailure
from tasks.exports.harbor import HarborError
from tasks.exports.harbor.host import ContainerHost, RewardUnreadable
from tasks.exports.harbor.identity import compare, factory_state
from tasks.exports.harbor.source import ExportTask
from tasks.gate.controls import Control, ControlTask, control_named, controls_for, run_control


@dataclass
class ControlReport:
    """One control's result in one folder (``error``: it could not be run)."""

    name: str
    reward: float | None = None
    checks_passed: int | None = None
    checks_total: int | None = None
    solve_exit: int | None = None
    solved: str = ""
    """``exit 0``, or where the solution failed (``Trial.solve_outcome``)."""
    error: str = ""

    @property
    def ok(self) -> bool:
        if self.error or self.reward is None:
            return False
        return control_named(self.name).holds(self.reward, self.solve_exit)


@dataclass
class FolderReport:
    task_id: str
    ecosystem: str
    folder: str
    identical: bool = False
    identity: str = ""
    controls: list[ControlReport] = field(default_factory=list)
    build_s: float = 0.0
    total_s: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return (not self.error and self.identical and bool(self.controls)
                and all(c.ok for c in self.controls))


def _report(host: ContainerHost, control: Control, task: ControlTask) -> ControlReport:
    report = ControlReport(control.name)
    try:
        trial = run_control(host, control, task)
    except (ContainerError, RewardUnreadable) as exc:
        report.error = str(exc)
        return report
    score = trial.score
    report.reward, report.checks_passed = score.reward, score.checks_passed
    report.checks_total, report.solve_exit = score.checks_total, trial.solve_exit
    report.solved = trial.solve_outcome
    return report


def check_folder(client, folder: Path, task: ExportTask, run: str,  # noqa: ANN001
                 stopping: Callable[[], bool] = lambda: False) -> FolderReport:
    """Build the folder's image and run every control and the identity check; once
    ``stopping()`` is true, nothing more is started (the report says it was stopped)."""
    t0 = time.perf_counter()
    report = FolderReport(task.row.task_id, task.row.ecosystem, str(folder))
    image = f"taskfactory/harbor-check:{task.row.task_id}-{run}"
    try:
        host = ContainerHost(client, image, folder, task, run)
        _unless(stopping)
        build_image(client, folder / "environment", image, host.cfg.build_timeout, run)
        report.build_s = time.perf_counter() - t0
        controlled = task.controlled
        for control in controls_for(controlled):
            _unless(stopping)
            report.controls.append(_report(host, control, controlled))
        if host.exported is not None:
            identity = compare(task, host.exported,
                               factory_state(task, f"{run}-{task.row.task_id}"))
            report.identical, report.identity = identity.identical, identity.detail
        else:
            report.identity = host.unreadable or "no control's container started"
    except (ContainerError, SandboxError, StageFailure, RuntimeError, OSError, KeyError,
            ValueError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"[:600]
    report.total_s = time.perf_counter() - t0
    return report


def _unless(stopping: Callable[[], bool]) -> None:
    if stopping():
        raise RuntimeError("stopped: the check was interrupted")


class CheckInterrupted(KeyboardInterrupt):
    """Ctrl-C during a check, once the check's containers are removed (``removed``)."""

    def __init__(self, removed: int) -> None:
        super().__init__(removed)
        self.removed = removed


def engine_client():  # noqa: ANN201 (docker.DockerClient; docker is imported lazily)
    """A client of the Docker engine; HarborError when none answers."""
    try:
        return harbor_container.engine_client()
    except ContainerError as exc:
        raise HarborError(f"checking needs a Docker engine, and none answers ({exc}); start "
                          "one with `make engine`") from None


def check_all(work: list[tuple[ExportTask, Path]], workers: int,
              done: Callable[[FolderReport], None],
              swept: Callable[[int], None] = lambda n: None) -> list[FolderReport]:
    """Check every (task, folder), ``workers`` at a time; ``done`` gets each report in
    order as it is ready.  First removes what killed checks left (``swept`` gets how
    many).  What this check made is removed at the end; after Ctrl-C (or SIGTERM) its
    containers are removed at once (a control in flight fails), folders in flight start
    nothing more, and once they are done their images are removed too; then
    :class:`CheckInterrupted`.  A check killed outright is swept by the next one."""
    client = engine_client()
    swept(sweep_stale(client))
    run = f"check-{os.getpid()}"
    results = []
    stop = threading.Event()
    pool = ThreadPoolExecutor(max(1, workers))
    try:
        for result in pool.map(lambda w: check_folder(client, w[1], w[0], run, stop.is_set),
                               work):
            done(result)
            results.append(result)
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise CheckInterrupted(remove_labelled(client, run)) from None
    finally:
        pool.shutdown(wait=True)
        remove_run(client, run)
    return results
