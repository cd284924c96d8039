"""``taskfactory solve`` end to end: the CLI against a real scripted OpenAI-compatible
server, SIGKILLed mid-run (a sandbox open) and run again: the run again reaps the killed
run's sandboxes and adds the missing attempts; then run a third time with nothing left to
do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from environments.docker.backend import OWNER_LABEL
from environments.local.config import LocalConfig
from tasks.dataset import Dataset
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import ROOT, accepted
from tests.support.openai_server import Behaviour, OpenAIServer
from tests.support.scripted_agents import reference_calls, replay

pytestmark = pytest.mark.docker
K = 3


def rollouts(data: Path) -> list[tuple]:
    return sorted(Dataset.open(data).rows("select task_id, attempt, stop_reason, reward "
                                          "from rollouts"))


def containers_of(pid: int) -> list:
    """The sandbox containers the process ``pid`` opened, running or not."""
    client = docker.from_env()
    try:
        return client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={pid}"})
    finally:
        client.close()


def solve_command(data: Path, srv: OpenAIServer) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "solve", "--data", str(data), "--k", str(K),
            "--base-url", srv.base_url, "--model", "replayer", "--workers", "1"]


def test_resumed_solve_adds_exactly_the_missing_attempts(tmp_path):
    data = tmp_path / "data"
    write_outcomes(data, "e2e-solve", accepted(["files", "sql"], LocalConfig(), 1, "e2e-solve"))
    by_instruction = {instruction: reference_calls(messages) for instruction, messages in
                      Dataset.open(data).rows(
                          "select t.instruction, j.messages from tasks t join trajectories j "
                          "using (task_id) where j.action_space = 'terminal' and "
                          "j.supervision = 'masked'")}

    def agent(body: dict) -> dict:
        time.sleep(0.3)  # slow enough that the kill lands mid-run
        return replay(by_instruction[body["messages"][1]["content"]])(body)

    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    with OpenAIServer(Behaviour(message=agent)) as srv:
        proc = subprocess.Popen(solve_command(data, srv), cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        deadline = time.monotonic() + 600
        while not (list((data / "rollouts").glob("*.parquet")) and containers_of(proc.pid)):
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kept = rollouts(data)
        assert 1 <= len(kept) < 2 * K
        assert containers_of(proc.pid)  # left behind by the kill

        again = subprocess.run(solve_command(data, srv), cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=900)
        assert again.returncode == 0, again.stderr[-2000:]
        assert f"{2 * K - len(kept)} attempts written, {len(kept)} already held" in again.stdout
        assert containers_of(proc.pid) == []
        after = rollouts(data)
        assert len(after) == 2 * K
        assert set(kept) <= set(after)
        assert {(t, a) for t, a, _, _ in after} == {
            (t, a) for t in {t for t, *_ in after} for a in range(K)}
        assert {(s, r) for _, _, s, r in after} == {("solved", 1.0)}

        third = subprocess.run(solve_command(data, srv), cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=900)
        assert third.returncode == 0, third.stderr[-2000:]
        assert f"0 attempts written, {2 * K} already held" in third.stdout
        # pass@k per tier, over every attempt held: both tasks medium, every attempt solved
        assert re.search(rf"^\| medium \| \S+ \| 2 \| {2 * K} \| {K} \| 1 \| 1 \|$",
                         third.stdout, re.MULTILINE), third.stdout
    _, rows = Dataset.open(data).query("select attempts, solved, pass_at_1, pass_at_k "
                                       "from difficulty order by task_id")
    assert rows == [(K, K, 1.0, 1.0)] * 2
