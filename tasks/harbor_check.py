"""Run exported Harbor task folders the way Harbor runs them, with the gate's controls.

For one folder: build the image from ``environment/`` (nothing pulled), then, for each
control, start a fresh container with the image's entrypoint, wait for the task's
healthcheck, create ``/logs/{agent,verifier,artifacts}`` (root, mode 777), apply the
control, upload ``tests/`` to ``/tests``, run ``tests/test.sh`` as the verifier user and
read the reward file (``reward.json`` first, as Harbor does, else ``reward.txt``).

Controls (the gate's, from ``tasks/shortcuts.py`` and ``solution_script``):

- ``nop``: nothing happens before the verifier; must score 0;
- ``reference``: ``solution/`` uploaded to ``/solution``, ``solve.sh`` made executable
  and run as the agent user (stdout to ``/logs/agent/oracle.txt``); must exit 0, score 1;
- ``empty``: every expected output created empty; must score 0;
- ``partial``: the reference minus its last mutating step, run as a ``solve.sh``; 0;
- ``literals``: every output holding the instruction's literals, the answer file tried
  as each literal in turn (``test.sh`` rerun per answer); every trial must score 0.

The nop control's container is also where the environment is compared with the
factory's, before its verifier runs (``tasks/harbor_identity.py``).  A folder passes when
it is identical and every control scored as required.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from environments.sandbox import SandboxError
from tasks.commands import solution_script
from tasks.failures import StageFailure
from tasks.harbor import LOGS_DIR, SOLUTION_DIR, TESTS_DIR, ExportTask
from tasks.harbor_container import CHECK_LABEL, ContainerError, TaskContainer
from tasks.harbor_identity import StateUnreadable, compare, exported_state, factory_state
from tasks.shortcuts import Shortcut, shortcut

LOG_DIRS = "/logs/agent /logs/verifier /logs/artifacts"


@dataclass
class Control:
    name: str
    reward: float | None = None
    checks_passed: int | None = None
    checks_total: int | None = None
    solve_exit: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        if self.error or self.reward is None:
            return False
        if self.name == "reference":
            return self.reward == 1 and self.solve_exit == 0
        return self.reward == 0


@dataclass
class FolderReport:
    task_id: str
    ecosystem: str
    folder: str
    identical: bool = False
    identity: str = ""
    controls: list[Control] = field(default_factory=list)
    build_s: float = 0.0
    total_s: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return (not self.error and self.identical and bool(self.controls)
                and all(c.ok for c in self.controls))


@dataclass(frozen=True)
class _Config:
    """What the check reads from ``task.toml``, as Harbor would."""

    agent_user: str
    verifier_user: str
    workdir: str
    cpus: float
    memory_mb: int
    agent_timeout: float
    verifier_timeout: float
    build_timeout: float
    healthcheck: dict | None

    @classmethod
    def read(cls, folder: Path) -> _Config:
        doc = tomllib.loads((folder / "task.toml").read_text())
        env, agent, verifier = doc["environment"], doc["agent"], doc["verifier"]
        return cls(str(agent.get("user") or ""), str(verifier.get("user") or ""),
                   env.get("workdir", "/workspace"), float(env.get("cpus", 1)),
                   int(env.get("memory_mb", 2048)), float(agent.get("timeout_sec", 600)),
                   float(verifier.get("timeout_sec", 600)),
                   float(env.get("build_timeout_sec", 600)), env.get("healthcheck"))


def _folder_files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def build_image(client, folder: Path, tag: str, timeout: float, run: str) -> None:  # noqa: ANN001
    """``docker build environment/`` with the engine's classic builder; never pulls.  The
    image is labelled with the check run, which removes it when done."""
    import docker.errors

    try:
        client.images.build(path=str(folder / "environment"), tag=tag, rm=True, forcerm=True,
                            pull=False, timeout=int(timeout),
                            labels={CHECK_LABEL: run})
    except docker.errors.BuildError as exc:
        log = "".join(str(e.get("stream") or e.get("error") or "") for e in exc.build_log)
        raise ContainerError(f"image build failed: {exc}: {log.strip()[-400:]}") from exc


class _Run:
    """One folder's controls, each in a fresh container of its image."""

    def __init__(self, client, image: str, folder: Path, task: ExportTask,  # noqa: ANN001
                 run: str) -> None:
        self.client, self.image, self.folder, self.task, self.run = client, image, folder, task, run
        self.cfg = _Config.read(folder)
        self.tests = _folder_files(folder / "tests")
        uid, _, gid = self.cfg.agent_user.partition(":")
        self.agent_ids = (int(uid or 0), int(gid or uid or 0))
        self.exported: tuple[dict, dict] | None = None
        """(probe state, manifest) read in the nop control's container, before its verifier."""
        self.unreadable = ""

    def container(self) -> TaskContainer:
        box = TaskContainer(self.client, self.image, cpus=self.cfg.cpus,
                            memory_mb=self.cfg.memory_mb, run=self.run)
        try:
            self._healthy(box)
            made = box.exec(f"mkdir -p {LOG_DIRS} && chmod 777 {LOG_DIRS}", user="root",
                            timeout=30)
            if made.exit_code != 0:
                raise ContainerError(f"cannot create the log folders: {made.output.strip()}")
        except BaseException:
            box.close()
            raise
        return box

    def _healthy(self, box: TaskContainer) -> None:
        hc = self.cfg.healthcheck
        if not hc:
            return
        deadline = time.monotonic() + float(hc.get("start_period_sec", 0)) + \
            float(hc.get("interval_sec", 5)) * int(hc.get("retries", 3))
        while True:
            done = box.exec(hc["command"], user="", timeout=float(hc.get("timeout_sec", 30)))
            if done.exit_code == 0:
                return
            if time.monotonic() > deadline:
                raise ContainerError(f"healthcheck never passed: {hc['command']}")
            time.sleep(float(hc.get("start_interval_sec", 1)))

    def solve(self, box: TaskContainer, script: str | None = None) -> int:
        """Upload the solution (or ``script`` as ``solve.sh``) and run it like Harbor's
        oracle agent; its exit code."""
        files = _folder_files(self.folder / "solution")
        if script is not None:
            files = {"solve.sh": (script.encode(), 0o755)}
        box.put(SOLUTION_DIR, files)
        box.exec(f"chmod +x {SOLUTION_DIR}/solve.sh", user="root", timeout=30)
        done = box.exec(f"{SOLUTION_DIR}/solve.sh > /logs/agent/oracle.txt 2>&1",
                        user=self.cfg.agent_user, timeout=self.cfg.agent_timeout,
                        env={"DEBIAN_FRONTEND": "noninteractive"})
        return done.exit_code

    def fake(self, box: TaskContainer, fake: Shortcut) -> None:
        if fake.files:
            box.put(self.cfg.workdir, {p: (d, 0o644) for p, d in fake.files.items()},
                    *self.agent_ids)
        if fake.script:
            done = box.exec(fake.script, user=self.cfg.agent_user, timeout=60,
                            workdir=self.cfg.workdir)
            if done.exit_code != 0:
                raise ContainerError(f"the shortcut could not be applied: "
                                     f"{done.output.strip()[-200:]}")

    def verify(self, box: TaskContainer, control: Control) -> None:
        """Upload tests/, run test.sh, read the reward into ``control``."""
        box.exec(f"rm -f {LOGS_DIR}/reward.txt {LOGS_DIR}/reward.json", user="root",
                 timeout=30)
        box.put(TESTS_DIR, self.tests)
        box.exec(f"chmod +x {TESTS_DIR}/test.sh", user="root", timeout=30)
        box.exec(f"{TESTS_DIR}/test.sh > {LOGS_DIR}/test-stdout.txt 2>&1",
                 user=self.cfg.verifier_user, timeout=self.cfg.verifier_timeout)
        raw = box.read(f"{LOGS_DIR}/reward.json")
        rewards = json.loads(raw) if raw else None
        if rewards is None:
            text = box.read(f"{LOGS_DIR}/reward.txt")
            rewards = {"reward": float(text)} if text and text.strip() else None
        if not isinstance(rewards, dict) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in rewards.values()):
            control.error = f"no flat numeric reward file: {rewards!r}"
            return
        if control.reward is None or rewards["reward"] > control.reward:
            control.reward = float(rewards["reward"])
            control.checks_passed = rewards.get("checks_passed")
            control.checks_total = rewards.get("checks_total")

    def control(self, name: str) -> Control:
        control, task = Control(name), self.task
        eco, trace, instruction = task.eco, task.trace, task.row.instruction
        try:
            with self.container() as box:
                if name == "reference":
                    control.solve_exit = self.solve(box)
                elif name == "partial":
                    writes = [s for s in trace.steps if eco.spec.tool(s.tool).effect == "write"]
                    steps = [s for s in trace.steps if s is not writes[-1]]
                    control.solve_exit = self.solve(
                        box, solution_script(trace, eco.spec.answer_file, steps))
                elif name in ("empty", "literals"):
                    fake = shortcut(eco, task.checks, name, instruction)
                    self.fake(box, fake)
                    for answer in fake.answers or [None]:
                        if answer is not None:
                            box.put(self.cfg.workdir, {eco.spec.answer_file: (
                                answer.encode(), 0o644)}, *self.agent_ids)
                        self.verify(box, control)
                    return control
                elif name == "nop":
                    try:
                        self.exported = exported_state(box, task, self.cfg.agent_user,
                                                       self.cfg.workdir)
                    except StateUnreadable as exc:
                        self.unreadable = str(exc)
                self.verify(box, control)
        except ContainerError as exc:
            control.error = str(exc)
        return control


def control_names(task: ExportTask) -> list[str]:
    has_write = any(task.eco.spec.tool(s.tool).effect == "write" for s in task.trace.steps)
    return ["nop", "reference", "empty", *(["partial"] if has_write else []), "literals"]


def check_folder(client, folder: Path, task: ExportTask, run: str) -> FolderReport:  # noqa: ANN001
    """Build the folder's image and run the identity check and every control."""
    t0 = time.perf_counter()
    report = FolderReport(task.row.task_id, task.row.ecosystem, str(folder))
    image = f"taskfactory/harbor-check:{task.row.task_id}-{run}"
    try:
        runner = _Run(client, image, folder, task, run)
        build_image(client, folder, image, runner.cfg.build_timeout, run)
        report.build_s = time.perf_counter() - t0
        report.controls = [runner.control(name) for name in control_names(task)]
        if runner.exported is not None:
            identity = compare(task, runner.exported,
                               factory_state(task, f"{run}-{task.row.task_id}"))
            report.identical, report.identity = identity.identical, identity.detail
        else:
            report.identity = runner.unreadable or "the nop control's container never started"
    except (ContainerError, SandboxError, StageFailure, RuntimeError, OSError, KeyError,
            ValueError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"[:600]
    report.total_s = time.perf_counter() - t0
    return report
