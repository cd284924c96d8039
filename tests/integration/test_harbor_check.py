"""Exported Harbor folders built and run the way Harbor runs them, on the real engine.

One accepted task per built-in ecosystem plus three planted-fault tasks whose repairs
added to the environment (a provided file, a provided folder, an installed package) are
exported with the CLI and checked with ``check-harbor``: every image must rebuild the
factory's environment exactly and every control must score as the gate did.  Broken
copies of the folders show that the check does fail: a seed byte changed, the git setup
dropped, a test.sh that rewards doing nothing.  Reconstruct tasks are exported and checked
too (their controls are nop, reference, memorizer, partial and, where the program makes
a choice, hardcoded), and no line of a hidden case is anywhere in their folders but
tests/, or in their built images.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import docker
import pytest

from environments.docker.config import DockerConfig
from environments.docker.harbor_container import CHECK_LABEL, remove_labelled, remove_run
from environments.ecosystems import load_ecosystem
from tasks.exports.harbor.check import check_folder
from tasks.exports.harbor.source import ExportTask, load_ecosystems, load_rows
from tests.integration.test_faults import FAULTS, planted
from tests.support.dataset import write_outcomes
from tests.support.harbor_data import ROOT, accepted, built, taskfactory
from tests.support.interrupts import CLI_WITH_CTRL_C, interrupt

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
    eco = load_ecosystems([row], [], data)[row.ecosystem, row.ecosystem_version]
    task = ExportTask.of(row, eco)
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

    from environments.docker.harbor_container import CHECK_LABEL, sweep_stale

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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_check_removes_its_containers_and_images(exported, signum):
    """SIGTERM (or Ctrl-C to the process group) while controls run: exit 130, and no
    container or image of the check is left — also none that a folder in flight would
    have started after the interrupt."""
    data, out, _ = exported
    proc = subprocess.Popen([sys.executable, "-c", CLI_WITH_CTRL_C, "check-harbor", str(out),
                             "--data", str(data), "--ecosystem-dir", FAULTS_DIR, "--workers",
                             "2"], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    client = docker.from_env()
    label = {"label": f"{CHECK_LABEL}=check-{proc.pid}"}
    try:
        deadline = time.monotonic() + 600
        while not client.api.containers(all=True, filters=label):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(1)  # controls running
        err = interrupt(proc, signum, 600)
        assert proc.returncode == 130, err[-3000:]
        assert "Traceback" not in err
        assert client.api.containers(all=True, filters=label) == []
        assert client.api.images(filters=label) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        remove_run(client, f"check-{proc.pid}")
        client.close()


@pytest.fixture(scope="module")
def reconstructed(tmp_path_factory):
    """Reconstruct tasks (one of files, one of git), exported with the CLI."""
    data, out = tmp_path_factory.mktemp("rdata"), tmp_path_factory.mktemp("rharbor")
    outcomes = accepted(["files", "git"], DockerConfig(), 1, RUN, seed=5,
                        kinds={"reconstruct": 1})
    write_outcomes(data, RUN, outcomes)
    proc = taskfactory("export", "harbor", "--data", data, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return data, out, [o.task for o in outcomes]


def test_reconstruct_folders_lay_out_the_examples_and_score_like_the_gate(reconstructed,
                                                                          tmp_path):
    data, out, tasks = reconstructed
    report = tmp_path / "report.json"
    proc = taskfactory("check-harbor", out, "--data", data, "--report", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"checked {len(tasks)} folders: {len(tasks)} passed, 0 failed" in proc.stdout
    gates = {t.task_id: t.gate for t in tasks}
    for r in json.loads(report.read_text()):
        assert r["ok"] and r["identical"] and not r["error"], r
        assert re.match(r"\d+ paths identical, probe state of 2 expected examples identical$",
                        r["identity"]), r["identity"]
        rewards = {c["name"]: c["reward"] for c in r["controls"]}
        gate = gates[r["task_id"]]
        assert rewards == {"nop": 0.0, "reference": 1.0, "memorizer": 0.0, "hostile": 0.0,
                           **({} if gate.partial_reward is None else {"partial": 0.0}),
                           **({} if gate.hardcoded_reward is None else {"hardcoded": 0.0}),
                           **({} if gate.near_miss_reward is None else {"near_miss": 0.0})}, r
        assert gate.hostile_reward == 0.0
        toml = (out / f"{r['ecosystem']}-{r['task_id']}/task.toml").read_text()
        assert "timeout_sec = 240.0" in toml  # the program on each of the 3 hidden cases


def _hidden_lines(task):
    """Lines of the task's hidden seed files that no public seed file has (as in
    tests/integration/test_reconstruct.py)."""
    eco = load_ecosystem(task.ecosystem)  # a built-in
    cases = json.loads(task.cases_json)
    seeds = {c["public"]: [] for c in cases}
    for c in cases:
        seeds[c["public"]] += eco.seed_state(c["seed"]).values()
    public = {line for data in seeds[True] for line in data.splitlines()}
    return sorted({line for data in seeds[False] for line in data.splitlines()
                   if len(line) >= 16 and line not in public and b"\0" not in line})


def _unpacked(path):
    """A file's bytes, and those of every member when it is a gzip tarball."""
    import tarfile

    yield path.read_bytes()
    if path.name.endswith(".tgz"):
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar.getmembers():
                if member.isfile():
                    yield tar.extractfile(member).read()


def test_no_hidden_case_byte_is_in_a_reconstruct_folder_but_its_tests_or_in_its_image(
        reconstructed):
    """Every hidden case is in tests/verify.py, and no line of its seed files that the
    public cases lack is in any other file of the folder (the examples' tarballs
    unpacked) or anywhere in a container of the built agent image."""
    import ast
    import base64

    from environments.docker.harbor_container import TaskContainer
    from tasks.exports.harbor.check import build_image

    _, out, tasks = reconstructed
    client = docker.from_env(timeout=900)
    try:
        for task in tasks:
            folder = out / f"{task.ecosystem}-{task.task_id}"
            hidden = _hidden_lines(task)
            assert len(hidden) > 10, task.task_id
            verifier = (folder / "tests/verify.py").read_text()
            literal = re.search(r"^CASES = json\.loads\((.*)\)$", verifier, re.M).group(1)
            carried = json.loads(ast.literal_eval(literal))
            blob = b"\0".join(base64.b64decode(d) for c in carried for d in c["files"].values())
            assert all(line in blob for line in hidden)  # the verifier has them all
            others = [p for p in sorted(folder.rglob("*"))
                      if p.is_file() and p.relative_to(folder).parts[0] != "tests"]
            assert any(p.name.endswith(".tgz") for p in others)
            for path in others:
                for data in _unpacked(path):
                    assert not [line for line in hidden if line in data], path
            image = f"taskfactory/harbor-check:leak-{task.task_id}-{RUN}"
            build_image(client, folder / "environment", image, 900, RUN)
            with TaskContainer(client, image, cpus=1, memory_mb=1024, run=RUN) as box:
                box.put("/tmp", {"hidden.txt": (b"\n".join(hidden) + b"\n", 0o644)})
                found = box.exec("grep -rlF -f /tmp/hidden.txt / --exclude-dir=proc "
                                 "--exclude-dir=sys --exclude-dir=dev 2>/dev/null "
                                 "| grep -vx /tmp/hidden.txt || true", user="root",
                                 timeout=300)
                assert found.exit_code == 0 and found.output.strip() == "", found.output
                assert box.exec("test -d /workspace/examples/case-a/expected", user="root",
                                timeout=30).exit_code == 0
                # the probe of the check: a hidden line is found where it is put
                box.put("/tmp/leak", {"x.txt": (hidden[0] + b"\n", 0o644)})
                found = box.exec("grep -rlF -f /tmp/hidden.txt /tmp/leak", user="root",
                                 timeout=30)
                assert found.output.strip() == "/tmp/leak/x.txt"
    finally:
        remove_labelled(client, RUN)
        for image in client.images.list(filters={"label": f"taskfactory.harbor-check={RUN}"}):
            client.images.remove(image.id, force=True)
        client.close()
