"""Exported Harbor folders built and run the way Harbor runs them, on the real engine.

One accepted task per built-in ecosystem plus three planted-fault tasks whose repairs
added to the environment (a provided file, a provided folder, an installed package) are
exported with the CLI and checked with ``check-harbor``: every image must rebuild the
factory's environment exactly and every control must score as the gate did.  Broken
copies of the folders show that the check does fail: a seed byte changed, the git setup
dropped, a test.sh that rewards doing nothing.
"""

import json
import os
import re
import shutil

import docker
import pytest

from environments.docker.config import DockerConfig
from tasks.harbor.check import check_folder
from tasks.harbor.container import remove_labelled
from tasks.harbor.source import ExportTask, load_ecosystems, load_rows
from tests.integration.test_faults import FAULTS, planted
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import ROOT, accepted, built, taskfactory

pytestmark = pytest.mark.docker
RUN = f"itest-harbor-{os.getpid()}"
FAULTS_DIR = str(ROOT / FAULTS)
REPAIRED = {"read_config": "files", "write_report": "dirs", "quote_lines": "packages"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    data, out = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("harbor")
    outcomes = accepted(["files", "sql", "git", "service"], DockerConfig(), 1, RUN)
    outcomes += built([(planted(tool), FAULTS_DIR) for tool in REPAIRED], DockerConfig(), RUN)
    write_outcomes(data, RUN, outcomes)
    tasks = [o.task for o in outcomes]
    proc = taskfactory("export", "harbor", "--data", data, "--out", out,
                       "--ecosystem-dir", FAULTS_DIR)
    assert proc.returncode == 0, proc.stderr
    return data, out, tasks


def test_every_exported_folder_rebuilds_the_environment_and_scores_like_the_gate(
        exported, tmp_path):
    data, out, tasks = exported
    report = tmp_path / "report.json"
    proc = taskfactory("check-harbor", out, "--data", data, "--ecosystem-dir", FAULTS_DIR,
                       "--report", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"checked {len(tasks)} folders: {len(tasks)} passed, 0 failed" in proc.stdout
    results = json.loads(report.read_text())
    gates = {t.task_id: t.gate for t in tasks}
    assert {r["task_id"] for r in results} == {t.task_id for t in tasks}
    for r in results:
        assert r["ok"] and r["identical"] and not r["error"], r
        assert re.match(r"\d+ paths identical, probe state identical$", r["identity"])
        rewards = {c["name"]: c["reward"] for c in r["controls"]}
        gate = gates[r["task_id"]]
        assert rewards.get("vandal") == gate.vandal_reward, r
        assert rewards.pop("alternative", None) == gate.alternative_reward, r
        assert rewards.pop("reference") == 1.0 and set(rewards.values()) == {0.0}
        assert {"nop", "empty", "literals"} <= set(rewards)
    vandalized = {r["ecosystem"] for r in results
                  if any(c["name"] == "vandal" for c in r["controls"])}
    assert vandalized == {t.ecosystem for t in tasks} - {"faults"}, vandalized
    by_tool = {t.tools[-1]: t for t in tasks if t.ecosystem == "faults"}
    for tool, kind in REPAIRED.items():  # the additions really are in those environments
        dockerfile = (out / f"faults-{by_tool[tool].task_id}/environment/Dockerfile").read_text()
        marker = {"files": "COPY --chown=1000:1000 additions/", "dirs": "mkdir -p -- reports",
                  "packages": "install -y --no-install-recommends jq"}[kind]
        assert marker in dockerfile, dockerfile


def _broken_copy(out, tmp_path, prefix):
    source = next(p for p in sorted(out.iterdir()) if p.name.startswith(prefix))
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    return copy


def _check(copy, data):
    row = load_rows(data, f"task_id = '{copy.name.split('-', 1)[1]}'")[0]
    task = ExportTask.of(row, load_ecosystems({row.ecosystem}, [])[row.ecosystem])
    client = docker.from_env(timeout=900)
    try:
        return check_folder(client, copy, task, RUN)
    finally:
        remove_labelled(client, RUN)
        for image in client.images.list(filters={"label": f"taskfactory.harbor-check={RUN}"}):
            client.images.remove(image.id, force=True)


def test_a_changed_seed_byte_is_not_the_factorys_environment(exported, tmp_path):
    data, out, _ = exported
    copy = _broken_copy(out, tmp_path, "files-")
    seed = next(p for p in sorted((copy / "environment/workspace").rglob("*")) if p.is_file())
    seed.write_bytes(seed.read_bytes() + b" ")
    report = _check(copy, data)
    assert not report.ok and not report.identical
    assert "differs from the one the factory executed from" in report.identity


def test_a_dropped_setup_step_fails_identity_and_the_reference(exported, tmp_path):
    data, out, _ = exported
    copy = _broken_copy(out, tmp_path, "git-")  # no repository: the git commands fail
    dockerfile = copy / "environment/Dockerfile"
    lines = dockerfile.read_text().splitlines()
    dockerfile.write_text("\n".join(x for x in lines if ".seed/build.sh" not in x) + "\n")
    report = _check(copy, data)
    assert not report.ok and not report.identical
    assert "the probe or the manifest fails in the exported image" in report.identity
    reference = next(c for c in report.controls if c.name == "reference")
    assert not reference.ok


def test_a_test_script_that_rewards_nothing_done_is_caught(exported, tmp_path):
    data, out, _ = exported
    copy = _broken_copy(out, tmp_path, "sql-")
    (copy / "tests/test.sh").write_text("#!/usr/bin/env bash\nmkdir -p /logs/verifier\n"
                                        "echo 1 > /logs/verifier/reward.txt\n")
    report = _check(copy, data)
    assert report.identical and not report.ok
    rewards = {c.name: c.reward for c in report.controls}
    assert rewards["nop"] == 1.0 and rewards["reference"] == 1.0


def test_a_check_sweeps_what_a_killed_check_left_and_keeps_a_live_ones():
    """Containers and images labelled by a check whose process is gone are removed; those
    of a running check (this process) are kept."""
    import contextlib
    import io
    import subprocess

    from tasks.harbor.container import CHECK_LABEL, sweep_stale

    dead = subprocess.Popen(["true"])
    dead.wait()
    client = docker.from_env()
    made = {}
    try:
        for who, pid in (("dead", dead.pid), ("live", os.getpid())):
            labels = {CHECK_LABEL: f"check-{pid}"}
            dockerfile = io.BytesIO(f"FROM {DockerConfig().image}\nLABEL sweep={who}\n".encode())
            image, _ = client.images.build(fileobj=dockerfile, labels=labels, rm=True)
            container = client.api.create_container(image.id, command=["true"], labels=labels)
            made[who] = (image.id, container["Id"])
        assert sweep_stale(client) >= 2
        existing = {c["Id"] for c in client.api.containers(all=True)}
        images = {i["Id"] for i in client.api.images()}
        assert made["dead"][1] not in existing and made["dead"][0] not in images
        assert made["live"][1] in existing and made["live"][0] in images
    finally:
        for image_id, container_id in made.values():
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(container_id, force=True)
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_image(image_id, force=True)
        client.close()
