"""``query``, ``stats``, ``card`` and ``run --resume`` on real shards, through the CLI."""

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from schemas.records import SCHEMA_VERSION
from tasks.dataset.store.manifest import load_manifest

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"
CLI = [sys.executable, "-m", "flows.cli"]


def run_cli(*args):
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture
def data(tmp_path):
    shutil.copytree(V1, tmp_path / "data")
    return tmp_path / "data"


def test_stats_reports_yield_and_distributions(data):
    proc = run_cli("stats", "--data", data)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for heading in ("## Overview", "## Yield per ecosystem", "## Rejection reasons",
                    "## Repairs", "## Distributions", "## Tasks by depth and shape",
                    "## Observation needed, per ecosystem"):
        assert heading in out
    assert "| all | 6 | 0 | 0 |  |  |" in out  # gated before the open-loop control existed
    assert "| files | 6 | 6 | 100 |" in out
    assert "| tokens per trajectory | 6 |" in out


def test_stats_and_query_do_not_import_prefect_or_docker(data):
    code = ("import sys; from flows.cli import main; main(['stats','--data',sys.argv[1]]); "
            "main(['query','select 1','--data',sys.argv[1]]); "
            "print(sorted(m for m in ('prefect','docker','matplotlib') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True,
                          text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr


def test_query_skips_a_truncated_shard_with_one_warning_and_exit_3(data):
    manifest = load_manifest(data)
    bad = data / next(s.path for s in manifest.shards if s.table == "trajectories")
    bad.write_bytes(bad.read_bytes()[:1000])
    proc = run_cli("query", "select (select count(*) from tasks), "
                            "(select count(*) from trajectories)", "--data", data,
                   "--format", "csv")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.splitlines()[1] == "6,0"
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("warning: skipping corrupt shard") and str(bad) in line
    assert f"taskfactory repair --data {data}" in line


def test_query_csv_ends_lines_with_a_newline_only(data):
    proc = subprocess.run(CLI + ["query", "select 'a' as x union all select 'b' order by 1",
                                 "--data", str(data), "--format", "csv"],
                          capture_output=True, timeout=120)  # bytes: no newline translation
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"x\na\nb\n"  # a shell reading a value gets no stray \r


def test_card_has_hf_configs_counts_and_png_plots(data):
    proc = run_cli("card", "--data", data)
    assert proc.returncode == 0, proc.stderr
    text = (data / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"tasks", "trajectories", "steps", "attempts", "runs"}
    assert configs["trajectories"]["default"] is True
    assert configs["tasks"]["data_files"] == [{"split": "train", "path": "tasks/*.parquet"}]
    assert "| tasks | 6 |" in text
    for name in ("depth.png", "steps.png", "yield.png", "tokens.png"):
        png = (data / "plots" / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and f"(plots/{name})" in text
        width, height = struct.unpack(">II", png[16:24])
        assert width >= 300 and height >= 200


NEWER = SCHEMA_VERSION + 1
"""A schema version this taskfactory does not read yet."""


@pytest.mark.parametrize("setup,args,needle", [
    ("none", ["--resume"], "no dataset at"),
    ("v1", ["--resume"], "no interrupted run in"),
    ("v1", ["--resume", "nosuch"], "--resume nosuch: no such run"),
    ("v1", ["--resume", "--tasks", "5"], "drop --tasks"),
    ("v1", ["--resume", "--require-observation"], "drop --require-observation"),
    ("newer", [], f"holds schema version {NEWER}; this taskfactory reads versions 1 to"),
    ("newer", ["--resume"], f"holds schema version {NEWER}"),
])
def test_bad_resume_and_dataset_input(tmp_path, setup, args, needle):
    data = tmp_path / "data"
    if setup != "none":
        shutil.copytree(V1, data)
    if setup == "newer":
        raw = json.loads((data / "_manifest.json").read_text())
        (data / "_manifest.json").write_text(json.dumps({**raw, "schema_version": NEWER}))
    before = sorted(p.name for p in data.rglob("*")) if data.exists() else []
    proc = run_cli("run", *args, "--data", data, "--backend", "local") if "--resume" not in args \
        else run_cli("run", *args, "--data", data)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("taskfactory: error:") and needle in line, line
    after = sorted(p.name for p in data.rglob("*")) if data.exists() else []
    assert after == before


def test_run_refuses_a_dataset_another_process_is_writing(data):
    from tasks.dataset.store.lock import open_for_writing

    with open_for_writing(data):
        proc = run_cli("run", "--data", data, "--backend", "local", "--tasks", 2)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "another taskfactory process is writing to" in line
