"""A long observation end to end: a tool that prints ~14k characters runs in a real local
sandbox, the candidate is accepted, its rows are committed, and ``export sft`` writes the
observation with a marker that says what was cut and by whom — the sandbox's output cap,
the trajectory renderer's ``OBSERVATION_CAP``, or both."""

import json
import shutil
import subprocess
import sys

import pytest

from environments.local.config import LocalConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from tasks.plan.planner import plan_candidates
from tasks.trajectories.render import OBSERVATION_CAP
from tests.support.dataset import write_outcomes

RUN_ID = "itest-long-observation"
PRINTED = "".join(f"{i}\n" for i in range(1, 3001))  # what `seq 1 3000` prints
SANDBOX = "the sandbox's output cap kept only the end of the command's output"


def renderer(cut: int) -> str:
    return f"the trajectory renderer cut the first {cut} characters to keep the last " \
           f"{OBSERVATION_CAP}"


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """The inventory example with a ``restock`` that also prints 1..3000, and a candidate
    that restocks then reads."""
    eco_dir = tmp_path_factory.mktemp("eco") / "inventory"
    shutil.copytree("tests/fixtures/ecosystems/inventory", eco_dir)
    spec = eco_dir / "ecosystem.yaml"
    text = spec.read_text()
    command = "{{ ledger }} > {{ ledger }}.tmp && mv {{ ledger }}.tmp {{ ledger }}"
    assert command in text
    spec.write_text(text.replace(command, command + " && seq 1 3000"))
    candidates, _ = plan_candidates(ecosystem(str(eco_dir)), 12, run_seed=3)
    chosen = next(c for c in candidates if c.graph.steps[0].tool == "restock")
    return eco_dir, chosen


@pytest.mark.parametrize(("cap_bytes", "marker", "kept"), [
    (None, renderer(len(PRINTED) - OBSERVATION_CAP), PRINTED[-OBSERVATION_CAP:]),
    (2000, SANDBOX, PRINTED[-2000:]),
    (8000, f"{SANDBOX}; then {renderer(8000 - OBSERVATION_CAP)}", PRINTED[-OBSERVATION_CAP:]),
])
def test_the_marker_says_what_was_cut_and_by_whom(noisy, tmp_path, cap_bytes, marker, kept):
    eco_dir, candidate = noisy
    backend = LocalConfig() if cap_bytes is None else LocalConfig(output_cap_bytes=cap_bytes)
    outcome = build_candidate(candidate, str(eco_dir), backend, RUN_ID)
    close_run(RUN_ID)
    assert outcome.task is not None, outcome.attempt
    write_outcomes(tmp_path / "data", RUN_ID, [outcome])
    out = tmp_path / "sft.jsonl"
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "export", "sft", "--data",
                           str(tmp_path / "data"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    observations = [m["content"] for m in row["messages"]
                    if m["role"] == "tool" and m["name"] == "restock"]
    assert observations
    for content in observations:
        first, _, rest = content.partition("\n")
        assert first == f"[output truncated: {marker}]"
        assert rest == kept
