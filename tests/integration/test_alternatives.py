"""Every correct route passes: the gate runs the solution with each step's alternative
command, and a verifier that pins what the task leaves open is rejected as overspecified,
naming the check and where the fix belongs.

The ``archive`` fixture compresses a document and hashes the archive; its intent does not
fix the compressor, and Python's gzip module writes other bytes than ``gzip``.  A copy
with the intent fixed (``gzip -n``, alternatives that write the same bytes) passes.  On
the local backend (gzip and python3 are the host's), and once on Docker.
"""

import os
import shutil
from pathlib import Path

import pytest
import yaml

from environments.docker.config import DockerConfig
from environments.local.config import LocalConfig
from flows.run.candidate import build_candidate
from flows.run.providers import close_run
from schemas.graph import Binding, Candidate, Step, WorkflowGraph

ARCHIVE = Path("tests/fixtures/ecosystems/archive")
RUN_ID = f"itest-alternatives-{os.getpid()}"
FIXED_INTENT = "{{ path }} compressed as `gzip -n` does (no file name or time stored)"
SAME_BYTES = ["gzip -n < {{ path }} > {{ out }}", "cat {{ path }} | gzip -n -6 > {{ out }}"]


def _candidate(*tools: str) -> Candidate:
    steps = [Step(id="s1", tool="compress",
                  bind={"path": Binding(kind="state", value="docs/doc1.txt"),
                        "out": Binding(kind="literal", value="out/archive.gz")})]
    if "checksum" in tools:
        steps.append(Step(id="s2", tool="checksum",
                          bind={"path": Binding(kind="step", step="s1")}))
    graph = WorkflowGraph(ecosystem="archive", shape="chain", steps=steps)
    return Candidate(candidate_id=f"archive-{len(steps)}", index=0, ecosystem="archive",
                     seed=3, graph=graph)


def _fixed(tmp_path: Path) -> str:
    """A copy of the fixture whose compress intent pins the bytes."""
    folder = tmp_path / "archive"
    shutil.copytree(ARCHIVE, folder)
    spec = yaml.safe_load((folder / "ecosystem.yaml").read_text())
    compress = spec["tools"][0]
    compress.update(command="gzip -n -c {{ path }} > {{ out }}", intent=FIXED_INTENT,
                    alternatives=SAME_BYTES)
    (folder / "ecosystem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(folder)


@pytest.fixture(params=[pytest.param(LocalConfig(), id="local"),
                        pytest.param(DockerConfig(), id="docker", marks=pytest.mark.docker)])
def backend(request):
    yield request.param
    close_run(RUN_ID)


def test_a_checksum_of_an_archive_pins_bytes_the_intent_leaves_open(backend):
    outcome = build_candidate(_candidate("compress", "checksum"), str(ARCHIVE), backend,
                              RUN_ID)
    a = outcome.attempt
    assert outcome.task is None
    assert (a.stage, a.reason) == ("validate", "overspecified"), (a.reason, a.detail)
    assert a.detail.startswith("the solution with the alternative commands of s1 compress, "
                               "s2 checksum exit 0, verifier "), a.detail
    assert a.detail.endswith("failing: answer.txt: it depends on the exact output of s1 "
                             "compress, which that tool's intent leaves open (fix the "
                             "intent's wording)"), a.detail


def test_an_archive_checked_byte_for_byte_names_the_comparison(backend):
    outcome = build_candidate(_candidate("compress"), str(ARCHIVE), backend, RUN_ID)
    a = outcome.attempt
    assert (a.stage, a.reason) == ("validate", "overspecified"), (a.reason, a.detail)
    assert a.detail.endswith("failing: files/out/archive.gz (from s1 compress): the check's "
                             "comparison is stricter than the tool's intent (fix the "
                             "comparison)"), a.detail


def test_with_the_intent_fixed_the_same_graphs_pass(backend, tmp_path):
    fixed = _fixed(tmp_path)
    for tools in (("compress", "checksum"), ("compress",)):
        outcome = build_candidate(_candidate(*tools), fixed, backend, RUN_ID)
        assert outcome.task is not None, (outcome.attempt.reason, outcome.attempt.detail)
        assert outcome.task.gate.alternative_reward == 1.0
        assert "`gzip -n`" in outcome.task.instruction
