"""A reconstruct task's agent workspace: the public examples, and nothing of the hidden cases.

The workspace holds ``examples/<case>/input/`` (a public case's initial state),
``examples/<case>/expected/`` (the state the program must leave in it) and
``examples/<case>/args.json`` (the program's arguments on it, a JSON list) for every public
case; the agent writes its program at ``solution/run.sh`` (:mod:`tasks.reconstruct.program`).
:func:`write_examples` lays it out in a sandbox (and the Harbor export in an image, with
the same :func:`unpacking`); :func:`hidden_leaks` names every hidden
case's seed content found in a workspace's files.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable, Mapping

from environments.sandbox import Sandbox
from tasks.core.failures import StageFailure
from tasks.reconstruct.cases import Case
from tasks.reconstruct.program import EXAMPLES

ARGS = "args.json"
"""An example's arguments, beside its input and expected folders."""
MIN_LEAK = 24
"""Shortest line (bytes) of a hidden seed file that counts as its content when found."""


def args_json(case: Case) -> bytes:
    return (json.dumps(case.args, ensure_ascii=False) + "\n").encode()


def example_files(cases: Iterable[Case]) -> dict[str, bytes]:
    """The agent's workspace as files (path -> bytes): every public case's input and
    expected tarballs, unpacked under ``examples/<case>/``."""
    files: dict[str, bytes] = {}
    for case in cases:
        if not case.public:
            continue
        files[f"{EXAMPLES}/{case.name}/{ARGS}"] = args_json(case)
        for part, blob in (("input", case.input_tar), ("expected", case.expected_tar)):
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
                for member in tar.getmembers():
                    if member.isfile() and (f := tar.extractfile(member)) is not None:
                        path = member.name.removeprefix("./")
                        files[f"{EXAMPLES}/{case.name}/{part}/{path}"] = f.read()
    return files


def unpacking(cases: Iterable[Case]) -> tuple[dict[str, bytes], str]:
    """How the public examples are laid out in an empty workspace: the files to write
    (relative paths: each example's arguments and its tarballs) and the bash script that,
    run in the workspace, unpacks the tarballs into place and deletes them."""
    blobs, script = {}, ["set -euo pipefail"]
    for case in cases:
        if not case.public:
            continue
        blobs[f"{EXAMPLES}/{case.name}/{ARGS}"] = args_json(case)
        for part, blob in (("input", case.input_tar), ("expected", case.expected_tar)):
            where, tgz = f"{EXAMPLES}/{case.name}/{part}", f".{case.name}-{part}.tgz"
            blobs[tgz] = blob
            script.append(f"mkdir -p {where} && tar -xzf {tgz} -C {where} && rm {tgz}")
    return blobs, "\n".join(script)


def write_examples(sandbox: Sandbox, cases: Iterable[Case]) -> None:
    """Empty the sandbox's workspace and unpack the public examples into it (modes, links
    and empty folders as the tarballs hold them)."""
    sandbox.exec(["bash", "-c", "find . -mindepth 1 -delete"], timeout=60)
    blobs, script = unpacking(cases)
    sandbox.write_files(blobs)
    done = sandbox.exec(["bash", "-c", script], timeout=60)
    if done.exit_code != 0:
        raise StageFailure("validate", "environment", "cannot lay out the examples: "
                                                      f"{done.stderr.strip()[-200:]}")


def hidden_leaks(workspace: Mapping[str, bytes], cases: Iterable[Case]) -> list[str]:
    """``<hidden case>:<seed file>`` for every hidden seed file that a workspace file holds,
    whole or by one of its lines (of :data:`MIN_LEAK` bytes or more) that no public seed
    file has."""
    cases = list(cases)
    public = {line for c in cases if c.public for data in c.files.values()
              for line in data.splitlines()}
    blob = b"\0".join(workspace.values())
    leaks = []
    for case in cases:
        if case.public:
            continue
        for path, data in sorted(case.files.items()):
            lines = [x for x in data.splitlines() if len(x) >= MIN_LEAK and x not in public]
            if (len(data) >= MIN_LEAK and data in blob) or any(x in blob for x in lines):
                leaks.append(f"{case.name}:{path}")
    return leaks
