"""``taskfactory export harbor`` without Docker: folder layout, task.toml, bad input.

The dataset is real: candidates of the built-in ``files`` ecosystem and of the user
ecosystem folder ``inventory`` run through the per-candidate pipeline on the local
backend, and the shard writer writes them; the export reads them back with DuckDB.
"""

import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from environments.ecosystems import load_ecosystem
from environments.ecosystems.code import TRUST
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import ROOT, accepted, taskfactory

INVENTORY = str(ROOT / "tests/fixtures/ecosystems/inventory")
NO_DOCKER = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock", TRUST: "1"}
"""No engine; the inventory folder, the project's test code, runs trusted on the host."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from environments.local.config import LocalConfig

    data = tmp_path_factory.mktemp("data")
    outcomes = accepted(["files", INVENTORY], LocalConfig(), 2, f"utest-harbor-{os.getpid()}")
    write_outcomes(data, "utest-harbor", outcomes)
    return data, {o.task.task_id: o.task for o in outcomes}


def export(data, out, *extra):
    return taskfactory("export", "harbor", "--data", data, "--out", out, *extra, env=NO_DOCKER)


def one_error_line(proc, needle):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskfactory: error:"), proc.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def test_every_task_becomes_a_harbor_folder(dataset, tmp_path):
    data, tasks = dataset
    proc = export(data, tmp_path / "out", "--ecosystem-dir", INVENTORY)
    assert proc.returncode == 0, proc.stderr
    assert "exported 4 tasks" in proc.stdout and "files 2, inventory 2" in proc.stdout
    folders = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in folders] == sorted(f"{t.ecosystem}-{t.task_id}"
                                               for t in tasks.values())
    for folder in folders:
        task = tasks[folder.name.split("-", 1)[1]]
        eco = load_ecosystem("files" if task.ecosystem == "files" else INVENTORY)
        seeds = eco.seed_state(task.seed, task.fault)  # a fix task: with its defect
        files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        assert files == {"task.toml", "instruction.md", "solution/solve.sh", "tests/test.sh",
                         "tests/verify.py", "environment/Dockerfile",
                         *(f"environment/workspace/{p}" for p in seeds)}
        for path, data_ in seeds.items():  # the seed, byte for byte, mode 0644
            copy = folder / "environment/workspace" / path
            assert copy.read_bytes() == data_ and stat.S_IMODE(copy.stat().st_mode) == 0o644
        assert (folder / "solution/solve.sh").read_text() == task.solution_sh
        assert (folder / "tests/verify.py").read_text() == task.verifier_py
        assert (folder / "instruction.md").read_text() == task.instruction.rstrip("\n") + "\n"
        for script in ("solution/solve.sh", "tests/test.sh"):
            assert stat.S_IMODE((folder / script).stat().st_mode) == 0o755
        dockerfile = (folder / "environment/Dockerfile").read_text()
        assert dockerfile.splitlines()[2] == "FROM taskfactory/base:bookworm"
        assert "COPY --chown=1000:1000 workspace/ /workspace/" in dockerfile
        copied = [line for line in dockerfile.splitlines() if line.startswith("COPY")]
        assert not any("tests" in line or "solution" in line for line in copied)
        assert "install -d -m 0700 -o root -g root /tests" in dockerfile  # root's only
        assert dockerfile.splitlines()[-2] == "USER root"  # the container's own processes
        assert not list((folder / "environment").rglob("verify.py"))


def test_task_toml_carries_harbor_fields_and_provenance(dataset, tmp_path):
    data, tasks = dataset
    assert export(data, tmp_path / "out", "--ecosystem-dir", INVENTORY,
                  "--network", "no-network").returncode == 0
    for folder in (tmp_path / "out").iterdir():
        doc = tomllib.loads((folder / "task.toml").read_text())
        meta = doc["metadata"]["taskfactory"]
        task = tasks[meta["task_id"]]
        assert doc["schema_version"] == "1.4"
        assert doc["task"]["name"] == f"taskfactory/{folder.name}"
        assert doc["verifier"] == {"timeout_sec": 120.0, "user": "root"}
        assert doc["agent"]["user"] == "1000:1000"
        env = doc["environment"]
        assert env["network_mode"] == "no-network" and env["workdir"] == "/workspace"
        assert env["cpus"] == 1.0 and env["memory_mb"] == 2048 and "healthcheck" not in env
        assert (meta["ecosystem"], meta["ecosystem_version"], meta["seed"], meta["run_id"]) == (
            task.ecosystem, task.ecosystem_version, task.seed, task.run_id)
        assert meta["generator_version"] == task.generator_version
        assert meta["initial_state_sha256"] == task.initial_state_sha256
        gate = {k: v for k, v in task.gate.model_dump().items() if v is not None}
        assert meta["gate"] == {**gate, "passed": True}


def test_where_selects_and_a_second_export_replaces_the_first(dataset, tmp_path):
    data, tasks = dataset
    out = tmp_path / "out"
    proc = export(data, out, "--where", "ecosystem = 'files'")
    assert proc.returncode == 0, proc.stderr
    first = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {p.relative_to(out).parts[0] for p in first} == {
        f"files-{t.task_id}" for t in tasks.values() if t.ecosystem == "files"}
    (out / next(iter(first)).relative_to(out).parts[0] / "stale.txt").write_text("old")
    assert export(data, out, "--where", "ecosystem = 'files'").returncode == 0
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == first
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_bad_input_is_one_line_and_writes_nothing(dataset, tmp_path):
    data, _ = dataset
    out = tmp_path / "out"
    one_error_line(export(tmp_path / "missing", out), "no dataset at")
    one_error_line(export(data, out, "--where", "nosuch_column = 1"), "--where: query failed")
    one_error_line(export(data, out, "--where", "ecosystem = 'git'"), "no accepted task")
    line = one_error_line(export(data, out), "ecosystem 'inventory' version 1+")
    assert line.endswith("which is not built in and has no snapshot in "
                         f"{data}; pass its folder with --ecosystem-dir"), line
    changed = tmp_path / "inventory"
    shutil.copytree(INVENTORY, changed)
    spec = changed / "ecosystem.yaml"
    spec.write_text(spec.read_text() + "\n# edited after the tasks were made\n")
    one_error_line(export(data, out, "--ecosystem-dir", changed),
                   "pass the ecosystem folder the task was generated with")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    one_error_line(export(data, blocker / "out", "--where", "ecosystem = 'files'"),
                   "cannot write to --out")
    assert not out.exists() and blocker.read_text() == "not a folder"


def test_export_imports_neither_prefect_nor_docker(dataset, tmp_path):
    data, _ = dataset
    code = ("import sys; from flows.cli import main; "
            f"rc = main(['export', 'harbor', '--data', {str(data)!r}, '--out', "
            f"{str(tmp_path / 'o')!r}, '--where', \"ecosystem = 'files'\"]); "
            "print(rc, sorted(m for m in ('prefect', 'docker') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stderr


def test_check_needs_a_docker_engine(dataset, tmp_path):
    data, _ = dataset
    exported = export(data, tmp_path / "out", "--where", "ecosystem = 'files'")
    assert exported.returncode == 0
    proc = taskfactory("check-harbor", tmp_path / "out", "--data", data, env=NO_DOCKER)
    one_error_line(proc, "checking needs a Docker engine")
    one_error_line(taskfactory("check-harbor", tmp_path / "none", "--data", data),
                   "no exported task folder at")
    assert Path(tmp_path / "out").is_dir()
