"""Run a probe's source in a docker sandbox the two ways it runs for real: as the factory
runs it (``python3 -`` as the sandbox user) and as the verifier runs it (exec'd in its own
process, as root); and the built-in probes as they were before they were hardened
(``tests/fixtures/probes_before``), for byte-for-byte comparisons and the benchmark."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import docker

from environments.docker.config import DockerConfig
from environments.docker.exec_path import exec_once
from environments.ecosystems import Ecosystem
from environments.sandbox import ExecResult, Sandbox

BEFORE = Path(__file__).parents[1] / "fixtures" / "probes_before"
IN_PROCESS = ("import sys; source = sys.stdin.read(); "
              "exec(compile(source, '<probe>', 'exec'), {'__name__': '__main__'})")
"""What the rendered verifier does with its probe (``probe_state`` in its template)."""
OUTPUT_CAP = 16 << 20


def probe_before(ecosystem: str) -> str:
    """The joined probe source of a built-in ecosystem before the hardening."""
    return (BEFORE / f"{ecosystem}.probe").read_text()


def verifier_like(eco: Ecosystem) -> DockerConfig:
    """``eco``'s docker config with Docker's default capabilities and privileges, as a
    Harbor container has them: root's execs get CAP_DAC_OVERRIDE, so root reads every file
    as the verifier does (in the factory's hardened containers root gets no capability at
    all); the sandbox user has none either way."""
    return DockerConfig(cap_drop=[], security_opt=[]).for_ecosystem(eco)


@cache
def _engine() -> docker.APIClient:
    return docker.from_env().api


def exec_as_root(sandbox: Sandbox, argv: list[str], stdin: bytes | None = None,
                 timeout: float = 30.0) -> ExecResult:
    """``argv`` run in ``sandbox``'s workdir as uid 0, through the engine."""
    container = getattr(sandbox, "container_id", None)
    if container is None:
        raise TypeError(f"{type(sandbox).__name__} runs no container: use the docker backend")
    return exec_once(_engine(), container, "0:0", OUTPUT_CAP, argv, timeout, sandbox.workdir,
                     None, stdin)


def run_probe_source(sandbox: Sandbox, source: str, as_root: bool = False,
                     timeout: float = 30.0) -> ExecResult:
    """``source`` run in ``sandbox``'s workdir: with ``python3 -`` as the sandbox user, or
    (``as_root``) exec'd in-process by ``python3 -c`` as uid 0."""
    if as_root:
        return exec_as_root(sandbox, ["python3", "-c", IN_PROCESS], source.encode(), timeout)
    return sandbox.exec(["python3", "-"], stdin=source.encode(), timeout=timeout)
