"""The rendered verifier, run as a real subprocess: passes exactly the right state."""

import json
import subprocess
import sys

import pytest

from schemas.verifier import Check
from tasks.verify import render_verifier

CHECKS = [
    Check(kind="file_text", path="out/a.txt", expected="x\ny\n"),
    Check(kind="file_lines_unordered", path="out/b.txt", expected=["1", "2", "2"], ordered=False),
    Check(kind="csv_rows", path="out/c.csv",
          expected={"header": ["id", "v"], "rows": [["1", "a"], ["2", "b"]]}, ordered=False),
    Check(kind="json_equal", path="cfg.json", expected={"port": 8081, "debug": True}),
    Check(kind="answer", path="answer.txt", expected="12.50"),
]
GOOD = {
    "out/a.txt": "x\ny\n",
    "out/b.txt": "2\n1\n2\n",
    "out/c.csv": "id,v\n2,b\n1,a\n",
    "cfg.json": '{"debug": true, "port": 8081}',
    "answer.txt": "12.5\n",
}
BROKEN = {  # one wrong detail per checked file
    "out/a.txt": "y\nx\n",
    "out/b.txt": "1\n2\n",
    "out/c.csv": "id,v\n1,a\n2,c\n",
    "cfg.json": '{"debug": true, "port": 8080}',
    "answer.txt": "12.6\n",
}


def run_verifier(root, logs=None):
    script = root.parent / "verify.py"
    script.write_text(render_verifier(CHECKS))
    cmd = [sys.executable, str(script), "--root", str(root)]
    cmd += ["--logs", str(logs)] if logs else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def lay_out(root, files):
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def test_correct_state_scores_one_and_writes_harbor_reward_files(tmp_path):
    root = tmp_path / "ws"
    lay_out(root, GOOD)
    proc, summary = run_verifier(root, logs=tmp_path / "logs")
    assert proc.returncode == 0
    assert summary == {"reward": 1, "checks_passed": 5, "checks_total": 5}
    assert (tmp_path / "logs/reward.txt").read_text().strip() == "1"
    reward = json.loads((tmp_path / "logs/reward.json").read_text())
    assert all(isinstance(v, int | float) for v in reward.values())


def test_empty_state_scores_zero(tmp_path):
    (tmp_path / "ws").mkdir()
    proc, summary = run_verifier(tmp_path / "ws")
    assert proc.returncode == 1 and summary["reward"] == 0 and summary["checks_passed"] == 0


@pytest.mark.parametrize("path", sorted(BROKEN))
def test_each_checked_place_matters(tmp_path, path):
    root = tmp_path / "ws"
    lay_out(root, {**GOOD, path: BROKEN[path]})
    _, summary = run_verifier(root)
    assert summary["reward"] == 0 and summary["checks_passed"] == 4


def test_verifier_is_stdlib_only():
    source = render_verifier(CHECKS)
    imports = {line.split()[1] for line in source.splitlines() if line.startswith("import ")}
    assert imports <= {"argparse", "collections", "csv", "io", "json", "os", "sys"}
