"""The rendered verifier, run as a real subprocess: passes exactly the right state."""

import json
import subprocess
import sys

import pytest

from environments.ecosystems import load_ecosystem
from schemas.verifier import Check
from tasks.verify.verifier import AUDIT, AUDIT_MARK, audited, audited_entry, render_verifier

PROBE = load_ecosystem("files").probe_source
CHECKS = [
    Check(kind="state", section="files", key="out/a.txt", compare="text", expected="x\ny\n"),
    Check(kind="state", section="files", key="out/b.txt", compare="lines_unordered",
          expected="1\n2\n2\n"),
    Check(kind="state", section="files", key="out/c.csv", compare="csv_unordered",
          expected="id,v\n1,a\n2,b\n"),
    Check(kind="state", section="files", key="cfg.json", compare="json_text",
          expected='{"port": 8081, "debug": true}'),
    Check(kind="state", section="files", key="old.txt", compare="absent", expected=None),
    Check(kind="answer", key="answer.txt", expected="12.50"),
]
GOOD = {
    "out/a.txt": "x\ny\n",
    "out/b.txt": "2\n1\n2\n",
    "out/c.csv": "id,v\n2,b\n1,a\n",
    "cfg.json": '{"debug": true, "port": 8081}',
    "answer.txt": "12.5\n",
}
BROKEN = {  # one wrong detail per checked place
    "out/a.txt": "y\nx\n",
    "out/b.txt": "1\n2\n",
    "out/c.csv": "id,v\n1,a\n2,c\n",
    "cfg.json": '{"debug": true, "port": 8080}',
    "old.txt": "still here",
    "answer.txt": "12.6\n",
}


def run_verifier(root, logs=None):
    script = root.parent / "verify.py"
    script.write_text(render_verifier(CHECKS, PROBE))
    cmd = [sys.executable, str(script), "--root", str(root)]
    cmd += ["--logs", str(logs)] if logs else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def lay_out(root, files):
    root.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def test_correct_state_scores_one_and_writes_harbor_reward_files(tmp_path):
    lay_out(tmp_path / "ws", GOOD)
    proc, summary = run_verifier(tmp_path / "ws", logs=tmp_path / "logs")
    assert proc.returncode == 0, proc.stderr
    assert summary == {"reward": 1, "checks_passed": 6, "checks_total": 6}
    assert (tmp_path / "logs/reward.txt").read_text().strip() == "1"
    reward = json.loads((tmp_path / "logs/reward.json").read_text())
    assert all(isinstance(v, int | float) for v in reward.values())


def test_empty_state_scores_zero(tmp_path):
    (tmp_path / "ws").mkdir()
    proc, summary = run_verifier(tmp_path / "ws")
    assert proc.returncode == 1 and summary["reward"] == 0 and summary["checks_passed"] == 1


@pytest.mark.parametrize("path", sorted(BROKEN))
def test_each_checked_place_matters(tmp_path, path):
    lay_out(tmp_path / "ws", {**GOOD, path: BROKEN[path]})
    _, summary = run_verifier(tmp_path / "ws")
    assert summary["reward"] == 0 and summary["checks_passed"] == 5


def test_verifier_is_stdlib_only():
    source = render_verifier(CHECKS, PROBE)
    imports = {line.split()[1].split(".")[0] for line in source.splitlines()
               if line.startswith(("import ", "from "))}
    assert imports and imports <= sys.stdlib_module_names


def test_answer_trials_read_the_state_once_and_report_the_best(tmp_path):
    lay_out(tmp_path / "ws", {**GOOD, "answer.txt": "wrong\n"})
    script = tmp_path / "verify.py"
    script.write_text(render_verifier(CHECKS, PROBE))
    trials = json.dumps(["1", "12.500", "x"])
    proc = subprocess.run([sys.executable, str(script), "--root", str(tmp_path / "ws"),
                           "--answers", trials], capture_output=True, text=True)
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary == {"reward": 1, "checks_passed": 6, "checks_total": 6, "trials": 3,
                       "trials_passed": 1}
    _, plain = run_verifier(tmp_path / "ws")  # the answer file itself is still wrong
    assert plain["reward"] == 0 and plain["checks_passed"] == 5


def _run_entry(script_text, root, logs, uid):
    script = root.parent / "verify-entry.py"
    script.write_text(script_text)
    return subprocess.run([sys.executable, "-I", "-S", str(script), "--root", str(root),
                           "--agent-user", f"{uid}:{uid}", "--logs", str(logs)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("files", [GOOD, BROKEN])
def test_the_audited_entry_prints_what_the_audit_after_the_run_would(tmp_path, files):
    """The verifier's own lines and exit code unchanged, then the audit's line: the same
    reward and exposures as the separate audit run on the state it left."""
    lay_out(tmp_path / "ws", files)
    uid = 64999  # nobody runs as it here: nothing to stop
    text = render_verifier(CHECKS, PROBE)
    plain = _run_entry(text, tmp_path / "ws", tmp_path / "plain-logs", uid)
    entry = audited_entry(text, f"{uid}:{uid}", str(tmp_path / "logs"))
    assert entry is not None
    both = _run_entry(entry, tmp_path / "ws", tmp_path / "logs", uid)
    *lines, audit = both.stdout.strip().splitlines()
    assert lines == plain.stdout.strip().splitlines()
    assert both.stderr == plain.stderr and both.returncode == plain.returncode
    assert audit.startswith(AUDIT_MARK)
    after = subprocess.run([sys.executable, "-I", "-S", "-", str(uid), str(tmp_path / "logs")],
                           input=AUDIT, capture_output=True, text=True)
    assert json.loads(audit[len(AUDIT_MARK):]) == json.loads(after.stdout.strip())
    assert json.loads(after.stdout)["reward"] == (1.0 if files is GOOD else 0.0)


def test_the_audited_entry_judges_with_the_factorys_seal_not_the_verifiers(tmp_path):
    """A verifier whose copy of the seal says nothing is exposed and leaves its logs
    folder open to everyone: the audit in its run still finds the open folder."""
    lay_out(tmp_path / "ws", GOOD)
    (tmp_path / "logs").mkdir(mode=0o777)
    (tmp_path / "logs").chmod(0o777)
    text = render_verifier(CHECKS, PROBE)
    weak = (text.replace("def take_logs(path):", "def take_logs(path):\n    return\n")
            .replace("def exposures(uid, logs):", "def exposures(uid, logs):\n    return []\n"))
    assert weak != text
    entry = audited_entry(weak, "64999:64999", str(tmp_path / "logs"))
    assert entry is not None
    audit = _run_entry(entry, tmp_path / "ws", tmp_path / "logs", 64999).stdout.splitlines()[-1]
    found = json.loads(audit[len(AUDIT_MARK):])
    assert found["exposed"] and audited(found["reward"], found["exposed"]) == 1.0


def test_a_verifier_without_the_usual_entry_point_gets_no_audited_entry():
    assert audited_entry("print('hi')\n", "1000:1000", "/logs/verifier") is None
