"""The controls' host in an exported Harbor image (:class:`tasks.gate.controls.Host`): each
control in a fresh container of the folder's image, driven the way Harbor drives it.

A control's container starts with the image's entrypoint; the task's healthcheck must
pass, then ``/logs/{agent,verifier,artifacts}`` are created (root, mode 777).  A solution
is uploaded to ``/solution`` (the folder's ``solution/``, or a control's own script as
``solve.sh``), made executable and run as the agent user with its output in
``/logs/agent/oracle.txt``; a shortcut's files are uploaded into the workdir as the agent
user and its commands run as that user.  The verifier: ``tests/`` uploaded to ``/tests``,
``tests/test.sh`` run as the verifier user, the reward file read (``reward.json`` first,
as Harbor does, else ``reward.txt``) — and counted as 1 when anything but the verifier could
still change it before a runner reads it (:func:`tasks.verify.seal.exposures`, checked as
root); with several answers, ``test.sh`` runs once per answer file.

The first container, before anything acts in it, is also where the exported environment
is read for the identity check (:mod:`tasks.exports.harbor.identity`).
"""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from environments.docker.harbor_container import ContainerError, TaskContainer
from tasks.exports.harbor.export import LOGS_DIR, SOLUTION_DIR, TESTS_DIR
from tasks.exports.harbor.identity import StateUnreadable, exported_state
from tasks.exports.harbor.source import ExportTask
from tasks.gate.controls import Score, Solved
from tasks.gate.shortcuts import Shortcut
from tasks.verify.verifier import AUDIT, audited

LOG_DIRS = "/logs/agent /logs/verifier /logs/artifacts"
AUDIT_FILE = ".taskfactory-audit.py"


class RewardUnreadable(RuntimeError):
    """The verifier left no flat numeric reward file."""


@dataclass(frozen=True)
class FolderConfig:
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
    def read(cls, folder: Path) -> FolderConfig:
        doc = tomllib.loads((folder / "task.toml").read_text())
        env, agent, verifier = doc["environment"], doc["agent"], doc["verifier"]
        return cls(str(agent.get("user") or ""), str(verifier.get("user") or ""),
                   env.get("workdir", "/workspace"), float(env.get("cpus", 1)),
                   int(env.get("memory_mb", 2048)), float(agent.get("timeout_sec", 600)),
                   float(verifier.get("timeout_sec", 600)),
                   float(env.get("build_timeout_sec", 600)), env.get("healthcheck"))


def folder_files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(folder.rglob("*")) if p.is_file()}


class ContainerHost:
    """One exported folder's controls, each in a fresh container of its image."""

    def __init__(self, client, image: str, folder: Path, task: ExportTask,  # noqa: ANN001
                 run: str) -> None:
        self.client, self.image, self.folder, self.task, self.run = client, image, folder, task, run
        self.cfg = FolderConfig.read(folder)
        self.tests = folder_files(folder / "tests")
        uid, _, gid = self.cfg.agent_user.partition(":")
        self.agent_ids = (int(uid or 0), int(gid or uid or 0))
        self.exported: tuple[dict, dict] | None = None
        """(probe state, manifest) read in the first container, before anything acted."""
        self.unreadable = ""
        self._box: TaskContainer | None = None

    @property
    def box(self) -> TaskContainer:
        if self._box is None:
            raise ContainerError("no container is running: a control acts only after start()")
        return self._box

    @contextmanager
    def start(self) -> Iterator[TaskContainer]:
        box = TaskContainer(self.client, self.image, cpus=self.cfg.cpus,
                            memory_mb=self.cfg.memory_mb, run=self.run)
        try:
            self._healthy(box)
            made = box.exec(f"mkdir -p {LOG_DIRS} && chmod 777 {LOG_DIRS}", user="root",
                            timeout=30)
            if made.exit_code != 0:
                raise ContainerError(f"cannot create the log folders: {made.output.strip()}")
            if self.exported is None and not self.unreadable:
                try:
                    self.exported = exported_state(box, self.task, self.cfg.agent_user,
                                                   self.cfg.workdir)
                except StateUnreadable as exc:
                    self.unreadable = str(exc)
            self._box = box
            yield box
        finally:
            self._box = None
            box.close()

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

    def solve(self, script: str | None = None) -> Solved:
        """Upload the solution (or ``script`` as ``solve.sh``) and run it like Harbor's
        oracle agent (its output goes to the agent log; the tail of it is the stderr)."""
        files = folder_files(self.folder / "solution")
        if script is not None:
            files = {"solve.sh": (script.encode(), 0o755)}
        self.box.put(SOLUTION_DIR, files)
        self.box.exec(f"chmod +x {SOLUTION_DIR}/solve.sh", user="root", timeout=30)
        done = self.box.exec(f"{SOLUTION_DIR}/solve.sh > /logs/agent/oracle.txt 2>&1",
                             user=self.cfg.agent_user, timeout=self.cfg.agent_timeout,
                             env={"DEBIAN_FRONTEND": "noninteractive"})
        log = self.box.exec("tail -c 4000 /logs/agent/oracle.txt", user="root", timeout=30)
        return Solved(done.exit_code, log.output if log.exit_code == 0 else "")

    def solved(self) -> Solved:
        """The reference solution, run again (each control has its own container)."""
        return self.solve()

    def apply(self, fake: Shortcut) -> None:
        if fake.files:
            self.box.put(self.cfg.workdir, {p: (d, 0o644) for p, d in fake.files.items()},
                         *self.agent_ids)
        if fake.script:
            done = self.box.exec(fake.script, user=self.cfg.agent_user, timeout=60,
                                 workdir=self.cfg.workdir)
            if done.exit_code != 0:
                raise ContainerError(f"the shortcut could not be applied: "
                                     f"{done.output.strip()[-200:]}")

    def score(self, answers: list[str] | None = None) -> Score:
        best: Score | None = None
        tries: list[str | None] = list(answers) if answers else [None]
        for answer in tries:
            if answer is not None:
                self.box.put(self.cfg.workdir, {self.task.eco.spec.answer_file: (
                    answer.encode(), 0o644)}, *self.agent_ids)
            trial = self._verify()
            if best is None or trial.reward > best.reward:
                best = trial
        assert best is not None
        return Score(best.reward, best.checks_passed, best.checks_total, len(answers or []),
                     best.failed)

    def _verify(self) -> Score:
        """Upload tests/, run test.sh, read the reward."""
        box = self.box
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
            raise RewardUnreadable(f"no flat numeric reward file: {rewards!r}")
        details = json.loads(box.read(f"{LOGS_DIR}/details.json") or "[]")
        failed = tuple(f"{d['section']}/{d['key']}" if d.get("section") else d["key"]
                       for d in details if isinstance(d, dict) and not d.get("passed"))
        return Score(audited(float(rewards["reward"]), self._exposures()),
                     rewards.get("checks_passed"), rewards.get("checks_total"), failed=failed)

    def _exposures(self) -> list[str]:
        """What would let anything but the verifier change the reward before a runner
        reads it (:func:`tasks.verify.seal.exposures`), checked as root once the verifier ran."""
        self.box.put(TESTS_DIR, {AUDIT_FILE: (AUDIT.encode(), 0o600)})
        done = self.box.exec(f"python3 -I -S {TESTS_DIR}/{AUDIT_FILE} {self.cfg.agent_user} "
                             f"{LOGS_DIR}", user="root", timeout=60)
        try:
            return list(json.loads(done.output.strip().splitlines()[-1])["exposed"])
        except (ValueError, IndexError, KeyError, TypeError):
            raise RewardUnreadable(f"the reward audit failed: {done.output[-300:]}") from None
