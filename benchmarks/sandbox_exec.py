"""Cost of one sandbox verb on the docker backend: the in-container runner vs docker exec.

    .venv/bin/python benchmarks/sandbox_exec.py [--calls 40] [--repeat 5]

Both paths (``DockerConfig.exec_via`` = "runner" and "docker-exec") run side by side in
this one process, alternating within each repeat so both see the same machine load. Per
verb and path it prints medians over repeats of the wall time per call and two CPU
times per call, then the ratios docker-exec / runner:

- system-wide: non-idle jiffies from /proc/stat, so dockerd, containerd, the shims, runc,
  the container and this client all count -- and so does any other load on the machine
  (the idle background rate is printed before each repeat);
- attributed: this process + dockerd and containerd with their reaped children (shared
  with any other engine user) + the benchmark containers' shims with their reaped runc
  children + the containers' cgroups. Short-lived containers escape it, so it is not
  given for "open + exec + close".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.docker.config import DockerConfig  # noqa: E402
from environments.registry import make_provider  # noqa: E402
from environments.sandbox import Sandbox, SandboxProvider  # noqa: E402

PATHS = ("docker-exec", "runner")
TICK = os.sysconf("SC_CLK_TCK")
FILES = {f"bench/f{i:02d}.txt": f"line {i}\n".encode() * 20 for i in range(20)}


def busy_seconds() -> float:
    """Non-idle CPU seconds of the whole machine since boot (user..steal, not idle/iowait)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / TICK


def _proc_cpu(pid: int, children: bool = False) -> float:
    """utime+stime (and cutime+cstime of reaped children) of ``pid``, in seconds; 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    ticks = [int(v) for v in fields[11:15]]  # utime stime cutime cstime
    return sum(ticks if children else ticks[:2]) / TICK


def _pids(match: Callable[[list[str]], bool]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if match(argv):
                found.append(int(entry.name))
    return found


def _cgroup_cpu(container_id: str) -> float:
    """CPU seconds used inside a container, from its cgroup (v1 or v2)."""
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text()) / 1e9
    for v2 in (Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat"),
               Path(f"/sys/fs/cgroup/docker/{container_id}/cpu.stat")):  # fmt: skip
        if v2.exists():
            usage = dict(line.split() for line in v2.read_text().splitlines())
            return int(usage["usage_usec"]) / 1e6
    return 0.0


class Attributed:
    """CPU seconds of the processes that serve calls into ``container_ids``."""

    def __init__(self, container_ids: list[str]) -> None:
        self.ids = container_ids
        self.daemons = _pids(lambda a: a[0].rsplit("/", 1)[-1] in ("dockerd", "containerd"))
        self.shims = _pids(lambda a: "containerd-shim" in a[0] and any(c in a for c in self.ids))

    def seconds(self) -> float:
        own = sum(os.times()[:2])
        daemons = sum(_proc_cpu(p, children=True) for p in self.daemons)  # + docker-untar
        shims = sum(_proc_cpu(p, children=True) for p in self.shims)
        return own + daemons + shims + sum(_cgroup_cpu(c) for c in self.ids)


def open_exec_close(_: Sandbox, provider: SandboxProvider) -> None:
    with provider.sandbox() as fresh:
        fresh.exec(["true"])


Verb = Callable[[Sandbox, SandboxProvider], object]
VERBS: dict[str, Verb] = {
    "exec true": lambda sb, _: sb.exec(["true"]),
    "exec python3 -c pass": lambda sb, _: sb.exec(["python3", "-c", "pass"]),
    "write_files (20 small)": lambda sb, _: sb.write_files(FILES),
    "read_file": lambda sb, _: sb.read_file("bench/f00.txt"),
    "snapshot + restore": lambda sb, _: sb.restore(sb.snapshot()),
    "open + exec + close": open_exec_close,
}


def measure(verb: Verb, sb: Sandbox, provider: SandboxProvider, calls: int,
            attributed: Attributed) -> tuple[float, float, float]:  # fmt: skip
    """(wall, system-wide CPU, attributed CPU) seconds per call over ``calls`` calls."""
    cpu0, own0, t0 = busy_seconds(), attributed.seconds(), time.perf_counter()
    for _ in range(calls):
        verb(sb, provider)
    wall, cpu = time.perf_counter() - t0, busy_seconds() - cpu0
    return wall / calls, cpu / calls, (attributed.seconds() - own0) / calls


def background_rate(seconds: float = 1.0) -> float:
    """Busy CPU seconds per second while this process sleeps (other load on the machine)."""
    cpu0 = busy_seconds()
    time.sleep(seconds)
    return (busy_seconds() - cpu0) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40, help="calls per verb per repeat")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    providers = {p: make_provider(DockerConfig(exec_via=p), f"bench-sandbox-exec-{os.getpid()}")
                 for p in PATHS}  # fmt: skip
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    try:
        sandboxes = {p: providers[p].open(labels={"bench": "sandbox_exec"}) for p in PATHS}
        for sb in sandboxes.values():  # warm up: start the runner, create the files
            sb.write_files(FILES)
            sb.exec(["true"])
        attributed = Attributed([sb.container_id for sb in sandboxes.values()])  # type: ignore[attr-defined]
        print(f"{args.repeat} repeats x {args.calls} calls per verb and path "
              f"({os.cpu_count()} cores)")  # fmt: skip
        for r in range(args.repeat):
            print(f"  repeat {r + 1}: background load {background_rate():.2f} CPU-s/s")
            for name, verb in VERBS.items():
                calls = max(2, args.calls // 8) if name.startswith("open") else args.calls
                for path in PATHS if r % 2 == 0 else PATHS[::-1]:
                    sample = measure(verb, sandboxes[path], providers[path], calls, attributed)
                    samples.setdefault((name, path), []).append(sample)
    finally:
        for p in providers.values():
            p.close()
    report(samples)


def report(samples: dict[tuple[str, str], list[tuple[float, float, float]]]) -> None:
    def med(name: str, path: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[(name, path)])

    def cells(values: list[float | None], unit: str) -> str:
        return " ".join(f"{'-':>15}" if v is None else f"{v:>14.2f}{unit}" for v in values)

    print(f"\n{'verb':<24} {'path':<12} {'wall ms/call':>15} {'CPU ms/call':>15} "
          f"{'attributed ms':>15}")  # fmt: skip
    for name in VERBS:
        keep = range(2) if name.startswith("open") else range(3)
        for path in PATHS:
            values = [1000 * med(name, path, i) if i in keep else None for i in range(3)]
            print(f"{name:<24} {path:<12} {cells(values, ' ')}")
        ratios = [med(name, "docker-exec", i) / med(name, "runner", i) if i in keep else None
                  for i in range(3)]  # fmt: skip
        print(f"{'':<24} {'ratio':<12} {cells(ratios, 'x')}")


if __name__ == "__main__":
    main()
