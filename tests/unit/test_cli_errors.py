"""Bad input: one line naming the problem, exit code 2, no traceback, nothing written."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.interrupts import CLI_WITH_CTRL_C

CLI = [sys.executable, "-m", "flows.cli"]


def run_cli(*args, cwd=None):
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(CLI + list(args), capture_output=True, text=True, env=env, timeout=60,
                          cwd=cwd)


@pytest.mark.parametrize("args,needle", [
    (["run", "--ecosystem", "nosuch"], "unknown ecosystem 'nosuch'"),
    (["run", "--tasks", "0"], "--tasks: Input should be greater than or equal to 1"),
    (["run", "--tasks", "many"], "--tasks: expected a whole number"),
    (["run", "--backend", "podman"], "invalid choice: 'podman'"),
    (["run", "--backend", "docker"], "no Docker daemon answers"),
])
def test_bad_run_input(tmp_path, args, needle):
    data = tmp_path / "data"
    proc = run_cli(*args, "--data", str(data))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("taskfactory: error:")
    assert "Traceback" not in proc.stderr
    assert not data.exists() or not any(data.iterdir())


@pytest.mark.parametrize("args,needle", [
    (["run", "--ecosystem", ""], "--ecosystem '' names no ecosystem"),
    (["run", "--ecosystem", " , "], "names no ecosystem"),
    (["plan", "--ecosystem", ""], "unknown ecosystem ''"),
    (["run", "--depth-weights", "1:nan"], "--depth-weights: weights must be finite"),
    (["plan", "--depth-weights", "2:inf,3:1"], "--depth-weights: weights must be finite"),
    (["run", "--depth-weights", ""], "--depth-weights: expected depth:weight pairs"),
    (["run", "--max-depth", "99"], "--max-depth: must be 1..8 (the plannable depths), got 99"),
    (["plan", "--max-depth", "0"], "--max-depth: must be 1..8"),
    (["run", "--kinds", ""], "--kinds: expected kind:weight pairs"),
    (["plan", "--kinds", "build:inf"], "--kinds: weights must be finite numbers >= 0, got inf"),
    (["run", "--kinds", "build:nan,fix:1"], "--kinds: weights must be finite"),
    (["run", "--seed", "-1"], "--seed: Input should be greater than or equal to 0"),
    (["plan", "--n", "0"], "--n: Input should be greater than or equal to 1"),
    (["run", "--workers", "65"], "--workers: Input should be less than or equal to 64"),
    (["run", "--max-repairs", "11"], "--max-repairs: Input should be less than or equal to 10"),
    (["run", "--off-scenario", "nan"], "--off-scenario: Input should be a finite number"),
    (["run", "--shard-rows", "-3"], "--shard-rows: Input should be greater than or equal to 1"),
    (["serve", "--cron", "not a cron"], "--cron 'not a cron' is not a cron schedule"),
    (["query", "select '\udcff'"], "argument sql: holds a byte that is not UTF-8"),
    (["export", "sft", "--out", ""], "argument --out: an empty path"),
    (["export", "harbor", "--out", " "], "argument --out: an empty path"),
    (["export", "preference", "--out", ""], "argument --out: an empty path"),
])
def test_bad_values_are_one_line_from_the_settings_model(tmp_path, args, needle):
    """Values that used to be accepted silently (``--max-depth 99``, ``--kinds ""``,
    ``--kinds build:inf``, an empty ``--out``) or ended in a traceback (``--ecosystem
    ""``, ``--depth-weights 1:nan``, ``--cron "not a cron"``, a non-UTF-8 byte)."""
    data = tmp_path / "data"
    where = [] if args[0] == "plan" else ["--data", str(data)]  # plan reads no dataset
    argv = [a.encode("utf-8", "surrogateescape") for a in (*args, *where)]
    proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"flows.cli", *argv],
                          capture_output=True, text=True, timeout=120, cwd=os.getcwd(),
                          env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert len(lines) == 1 and lines[0].startswith("taskfactory: error: "), proc.stderr
    assert needle in lines[0]
    assert not data.exists()


def test_unwritable_data_dir(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = run_cli("run", "--data", str(blocker / "data"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "cannot write the dataset" in proc.stderr
    assert blocker.read_text() == "not a folder"


def test_query_errors(tmp_path):
    proc = run_cli("query", "select 1", "--data", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no dataset at" in proc.stderr
    (tmp_path / "d").mkdir()
    proc = run_cli("query", "select * from nosuch", "--data", str(tmp_path / "d"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "query failed" in proc.stderr


def test_query_does_not_import_prefect_or_docker(tmp_path):
    code = ("import sys; from flows.cli import main; main(['query','select 1','--data','.']); "
            "print(sorted(m for m in ('prefect','docker') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.stdout.strip().splitlines()[-1] == "[]"


INVENTORY = "tests/fixtures/ecosystems/inventory"


def test_plan_reports_diversity_without_running_anything():
    proc = run_cli("plan", "--ecosystem", INVENTORY, "--n", "200", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    import json
    report = json.loads(proc.stdout)
    assert report["ecosystem"] == "inventory" and report["graphs"] == 200
    assert report["tools_used"] == report["tools_total"] == 5
    assert sum(report["depth_histogram"].values()) == 200


def test_run_warns_about_an_ecosystem_without_discovery(tmp_path, capsys):
    """The fixture declares no discovery and no fault injectors: a run that will start says
    both (the default mix asks for fix tasks where possible); a run refused (an unwritable
    --data) prints its one error line only, and so does plan."""
    from flows.cli import build_parser
    from flows.commands.run import _settings

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = run_cli("run", "--ecosystem", INVENTORY, "--data", str(blocker / "data"))
    (error,) = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "cannot write the dataset" in error

    args = build_parser().parse_args(["run", "--ecosystem", str(INVENTORY),
                                      "--data", str(tmp_path / "data")])
    _settings(args)
    note, warning = capsys.readouterr().err.strip().splitlines()
    assert note.startswith("note: ecosystem inventory has no fault injectors")
    assert warning.startswith("warning: ecosystem inventory declares no discovery")

    proc = run_cli("plan", "--ecosystem", INVENTORY, "--n", "3")
    assert proc.returncode == 0
    assert proc.stderr.startswith("note: ecosystem inventory has no fault injectors")


def test_malformed_spec_through_the_cli(tmp_path):
    import shutil
    eco = tmp_path / "broken"
    shutil.copytree(INVENTORY, eco)
    spec = eco / "ecosystem.yaml"
    spec.write_text(spec.read_text().replace("parser: int}", "parser: integer}", 1))
    for command in (["plan"], ["run", "--data", str(tmp_path / "d")]):
        proc = run_cli(*command, "--ecosystem", str(eco))
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert f"{spec}: field 'tools.0 (quantity_of).returns.parser'" in proc.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("option", ["--k", "--workers", "--max-turns"])
def test_bad_solve_input_is_rejected_by_the_settings_model(tmp_path, option):
    proc = run_cli("solve", "--data", str(tmp_path), option, "0", "--base-url",
                   "http://127.0.0.1:9/v1", "--model", "m")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"taskfactory: error: {option}: Input should be greater than or equal to 1"]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_plan_is_one_line_and_exit_130(signum):
    """Ctrl-C (or SIGTERM) while `plan` works: one line, exit code 130, no traceback.  The
    CLI starts with SIGINT at its default, as a terminal's job has it (a suite started
    without job control would hand it down ignored), and is killed if it does not stop."""
    proc = subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "plan", "--n", "1000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)  # past the imports, into planning
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["taskfactory: interrupted; nothing was left running"]
    assert out == ""
