"""Probe time per built-in ecosystem: the hardened probes beside the ones before them.

    .venv/bin/python benchmarks/probes.py [--runs 20] [--ecosystems files,sql,git,service]

For each built-in, one docker sandbox holds a planned candidate's state after its real
steps (run seed 7, the first candidate whose steps run).  On it, the probe before the
hardening (``tests/fixtures/probes_before``) and the current one alternate, ``--runs``
times each, measured two ways:

- factory: the wall time of ``python3 -`` through the sandbox (the runner's round trip and
  the interpreter's start included), as execution and the gate pay it per state;
- in-process: the probe alone (compiled and exec'd, as the verifier runs it) in one python
  process inside the container, timed there: wall time, and CPU time of the process and
  of the programs it ran (``git``), which other load on the machine and the container's
  CPU quota disturb less.

Prints the median of each, in ms, and the ratio new / old per ecosystem.  Timings depend on
the machine: compare the ratios, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.docker.config import DockerConfig  # noqa: E402
from environments.ecosystems import Ecosystem, builtin_names, load_ecosystem  # noqa: E402
from environments.registry import make_provider  # noqa: E402
from environments.sandbox import Sandbox  # noqa: E402
from tasks.core.failures import StageFailure  # noqa: E402
from tasks.execute.realize import realize  # noqa: E402
from tasks.execute.steps import run_step  # noqa: E402
from tasks.plan.planner import plan_candidates  # noqa: E402
from tests.support.probe_runs import probe_before  # noqa: E402

IN_PROCESS = r'''
import contextlib, io, json, resource, sys, time
sources, runs = json.loads(sys.stdin.read()), int(sys.argv[1])
times = {how: {name: [] for name in sources} for how in ("wall", "cpu")}

def cpu():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime

for _ in range(runs):
    for name, source in sources.items():
        start, used = time.perf_counter(), cpu()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, "<probe>", "exec"), {"__name__": "__main__"})
        times["wall"][name].append(time.perf_counter() - start)
        times["cpu"][name].append(cpu() - used)
print(json.dumps(times))
'''


def stage(sandbox: Sandbox, eco: Ecosystem) -> int:
    """Realize the first planned candidate whose steps run; returns the steps run."""
    for candidate in plan_candidates(eco, 8, run_seed=7)[0]:
        realize(sandbox, eco, candidate.seed, fault=candidate.graph.fault)
        outputs: dict[str, object] = {}
        for step in candidate.graph.steps:
            try:
                outputs[step.id] = run_step(sandbox, eco, candidate, step, outputs).output
            except StageFailure:
                break
        if outputs:
            return len(outputs)
    return 0


def factory_times(sandbox: Sandbox, sources: dict[str, str], runs: int) -> dict[str, list]:
    times: dict[str, list[float]] = {name: [] for name in sources}
    for _ in range(runs):
        for name, source in sources.items():
            start = time.perf_counter()
            done = sandbox.exec(["python3", "-"], stdin=source.encode(), timeout=60)
            times[name].append(time.perf_counter() - start)
            if done.exit_code != 0:
                raise RuntimeError(f"{name} probe failed: {done.stderr[-300:]}")
    return times


def in_process_times(sandbox: Sandbox, sources: dict[str, str], runs: int
                     ) -> dict[str, dict[str, list]]:
    done = sandbox.exec(["python3", "-c", IN_PROCESS, str(runs)],
                        stdin=json.dumps(sources).encode(), timeout=600)
    if done.exit_code != 0:
        raise RuntimeError(f"in-process timing failed: {done.stderr[-300:]}")
    return dict(json.loads(done.stdout))


def measure(name: str, runs: int) -> list[str]:
    eco = load_ecosystem(name)
    provider = make_provider(DockerConfig().for_ecosystem(eco), f"bench-probes-{name}")
    try:
        sandbox = provider.open(labels={"bench": "probes"})
        steps = stage(sandbox, eco)
        sources = {"old": probe_before(name), "new": eco.probe_source}
        factory_times(sandbox, sources, 2)  # warm the page cache and the runner
        inside = in_process_times(sandbox, sources, runs)
        measured = {"factory wall": factory_times(sandbox, sources, runs),
                    "in-process wall": inside["wall"], "in-process cpu": inside["cpu"]}
        rows = []
        for how, times in measured.items():
            old, new = (statistics.median(times[k]) * 1000 for k in ("old", "new"))
            ratio = f"{new / old:7.2f}" if old else "      -"
            rows.append(f"{name:8} {how:16} {old:9.1f} {new:9.1f} {ratio}   ({steps} steps run)")
        return rows
    finally:
        provider.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--ecosystems", default=",".join(builtin_names()))
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    unknown = set(args.ecosystems.split(",")) - set(builtin_names())
    if unknown:
        parser.error(f"unknown ecosystem(s) {', '.join(sorted(unknown))}: use "
                     f"{', '.join(builtin_names())}")
    print(f"{'ecosystem':8} {'measure':16} {'old ms':>9} {'new ms':>9} {'new/old':>7}")
    for name in args.ecosystems.split(","):
        for row in measure(name, args.runs):
            print(row, flush=True)


if __name__ == "__main__":
    main()
