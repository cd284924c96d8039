"""CPU spent inside the sandbox containers, per kind of sandbox call, per ecosystem.

    .venv/bin/python benchmarks/container_cpu.py [--tasks 12] [--ecosystems files,git,sql,service]

Runs the factory flow on Docker with one worker, once per ecosystem, and reads each
container's CPU counter (its cgroup's, v1 or v2) before and after every sandbox call:
solution scripts (``bash -s``), single commands (``bash -c``: execution and replay
steps), verifiers, probes (``python3 -``), and restores.  Prints, per ecosystem, the
milliseconds of container CPU per call and per candidate.  What the engine, the host's
Python and Prefect spend is not counted: this says which work in the containers a
change of the gate or of an ecosystem's commands would save.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

from environments.docker.backend import DockerSandbox  # noqa: E402
from flows.factory import run_factory  # noqa: E402
from flows.settings import RunSettings  # noqa: E402

CGROUP_FILES = ("/sys/fs/cgroup/cpuacct/docker/{id}/cpuacct.usage",  # v1, ns
                "/sys/fs/cgroup/system.slice/docker-{id}.scope/cpu.stat",  # v2, systemd
                "/sys/fs/cgroup/docker/{id}/cpu.stat")  # v2, cgroupfs
CPU_MS: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def container_ms(container_id: str) -> float:
    """The container's CPU time so far in ms (0 when no cgroup file is found)."""
    for pattern in CGROUP_FILES:
        try:
            text = Path(pattern.format(id=container_id)).read_text()
        except OSError:
            continue
        if pattern.endswith("cpuacct.usage"):
            return int(text) / 1e6
        fields = dict(line.split() for line in text.splitlines())
        return int(fields["usage_usec"]) / 1e3
    return 0.0


def kind_of_exec(argv: list[str], *_: object, **__: object) -> str:
    if "--root" in argv:
        return "verifier"
    if argv[:2] == ["bash", "-s"]:
        return "solution script (bash -s)"
    if argv[:2] == ["bash", "-c"]:
        return "command (bash -c)"
    if argv[:2] == ["python3", "-"]:
        return "probe (python3 -)"
    return argv[0]


def counted(name: str, kind: Callable[..., str]) -> None:
    """Wrap ``DockerSandbox.<name>`` to add its container's CPU to ``kind(args)``."""
    call = getattr(DockerSandbox, name)

    def wrapped(self: DockerSandbox, *args: object, **kwargs: object) -> object:
        before = container_ms(self.container_id)
        try:
            return call(self, *args, **kwargs)
        finally:
            label = kind(*args, **kwargs)
            CPU_MS[label] += container_ms(self.container_id) - before
            CALLS[label] += 1

    setattr(DockerSandbox, name, wrapped)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12, help="candidates per ecosystem")
    ap.add_argument("--ecosystems", default="files,git,sql,service")
    args = ap.parse_args()
    counted("exec", kind_of_exec)
    counted("restore", lambda *_, **__: "restore")
    print(f"{'ecosystem':10s} {'call':28s} {'calls/cand':>10s} {'ms/call':>8s} "
          f"{'ms/cand':>8s}")
    for eco in args.ecosystems.split(","):
        CPU_MS.clear()
        CALLS.clear()
        with tempfile.TemporaryDirectory() as tmp:
            summary = run_factory(RunSettings(tasks=args.tasks, seed=1, data=Path(tmp),
                                              backend="docker", workers=1, ecosystems=[eco]))
        n = summary.candidates
        for label in sorted(CPU_MS, key=lambda k: -CPU_MS[k]):
            print(f"{eco:10s} {label:28s} {CALLS[label] / n:10.1f} "
                  f"{CPU_MS[label] / CALLS[label]:8.1f} {CPU_MS[label] / n:8.1f}")
        print(f"{eco:10s} {'all counted calls':28s} {'':10s} {'':8s} "
              f"{sum(CPU_MS.values()) / n:8.1f}")


if __name__ == "__main__":
    main()
