"""What the run-time bounds cost in throughput, measured side by side.

    .venv/bin/python benchmarks/bounds_cost.py --compare isolate [--tasks 100] [--repeat 3]
    .venv/bin/python benchmarks/bounds_cost.py --compare scratch
    .venv/bin/python benchmarks/bounds_cost.py --compare calls
    .venv/bin/python benchmarks/bounds_cost.py --compare plan [--tasks 500] [--repeat 5]

``isolate``: the built-in ecosystems' seed and samplers in worker processes
(``TASKFACTORY_ISOLATE_BUILTINS=1``, as a user's folder always runs) against in this
process (the default).  ``scratch``: the sandbox's writable places in memory with a
read-only root filesystem (``DockerConfig.tmp_mb``, the default) against ``tmp_mb=0``
(``/tmp``, the home and the rest on the container's disk layer).  One uncounted warm-up
run per side, then ``--repeat`` rounds of ``A B`` (alternating, so drift in the
machine's speed hits both alike) in one process; prints each run and the medians.
``calls``: one ``generate`` of each built-in seed, in this process, in a worker on this
host and in a worker in a sandbox container (median of 4 alternating rounds of 50 seeds):
the cost per call, without the noise of whole runs.  ``plan``: loading a user's ecosystem
folder and planning ``--tasks`` candidates (``taskfactory plan``), its code in workers on
this host (``TASKFACTORY_TRUST_ECOSYSTEMS=1``) against in sandbox containers (the
default), for the inventory example and for a copy of the built-in ``files`` (Faker)
as a user's folder; alternating rounds, medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from throughput import one_run  # noqa: E402

import flows.factory  # noqa: E402
import flows.run.candidate  # noqa: E402
from environments.docker.config import DockerConfig  # noqa: E402
from environments.ecosystems import BUILTIN_DIR, builtin_names, load_ecosystem  # noqa: E402
from environments.ecosystems.code import TRUST, Placement, load_functions  # noqa: E402
from environments.registry import resolve_backend  # noqa: E402


def isolate(on: bool) -> None:
    if on:
        os.environ["TASKFACTORY_ISOLATE_BUILTINS"] = "1"
    else:
        os.environ.pop("TASKFACTORY_ISOLATE_BUILTINS", None)
    flows.run.candidate.ecosystem.cache_clear()  # loaded again, in or out of workers


def scratch(on: bool) -> None:
    flows.factory.resolve_backend = (  # type: ignore[attr-defined]
        resolve_backend if on else lambda name: DockerConfig(tmp_mb=0))


SIDES: dict[str, tuple[Callable[[bool], None], str, str]] = {
    "isolate": (isolate, "built-ins in-process", "built-ins in workers"),
    "scratch": (scratch, "writable places in memory, root read-only", "tmp_mb=0 (disk layer)"),
}


PLACES: tuple[Placement, ...] = ("in-process", "host", "sandbox")


def seed_calls() -> None:
    def median_call(fn: Callable[[int], object], seeds: range) -> float:
        times = []
        for seed in seeds:
            t0 = time.perf_counter()
            fn(seed)
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    for name in builtin_names():
        folder = BUILTIN_DIR / name
        generate = {w: load_functions(folder, {"seed": "seed.py"}, w)[0]["seed"]["generate"]
                    for w in PLACES}
        medians: dict[str, list[float]] = {w: [] for w in PLACES}
        for r in range(4):
            for w in PLACES:
                medians[w].append(median_call(generate[w], range(50 * r, 50 * r + 50)))
        ms = {w: 1000 * statistics.median(medians[w]) for w in PLACES}
        print(f"{name:<8} generate: " + ", ".join(f"{ms[w]:6.2f} ms {w}" for w in PLACES))


def plan_cost(n: int, repeat: int) -> None:
    from tasks.plan.planner import plan_candidates

    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / "files"
        shutil.copytree(BUILTIN_DIR / "files", files)
        for folder in (Path(__file__).resolve().parents[1] / "tests/fixtures/ecosystems/inventory",
                       files):
            seconds: dict[str, list[float]] = {"host": [], "sandbox": []}
            for _ in range(repeat):
                for side in seconds:
                    os.environ[TRUST] = "1" if side == "host" else "0"
                    t0 = time.perf_counter()
                    plan_candidates(load_ecosystem(str(folder)), n, 7)
                    seconds[side].append(time.perf_counter() - t0)
            host, box = (statistics.median(seconds[side]) for side in ("host", "sandbox"))
            print(f"{folder.name:<10} load + plan {n}: {host:6.2f} s on this host, {box:6.2f} s "
                  f"sandboxed ({box / host:.2f}x; {n / host:.0f} vs {n / box:.0f} graphs/s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", choices=[*sorted(SIDES), "calls", "plan"], required=True)
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    if args.compare == "calls":
        return seed_calls()
    if args.compare == "plan":
        return plan_cost(args.tasks, args.repeat)
    switch, *labels = SIDES[args.compare]
    sides = {labels[0]: False, labels[1]: True} if args.compare == "isolate" else {
        labels[0]: True, labels[1]: False}
    for on in sides.values():  # warm-up: Prefect, images, workers
        switch(on)
        one_run(8, 999, "docker", args.workers)
    rates: dict[str, list[float]] = {label: [] for label in sides}
    for seed in range(1, args.repeat + 1):
        for label, on in sides.items():
            switch(on)
            r = one_run(args.tasks, seed, "docker", args.workers)
            rates[label].append(r["per_min"])
            print(f"  seed {seed}, {label}: {r['accepted']}/{r['candidates']} accepted in "
                  f"{r['wall_s']:.1f} s = {r['per_min']:.1f} accepted/min", flush=True)
    first = statistics.median(rates[labels[0]])
    for label in sides:
        med = statistics.median(rates[label])
        print(f"median, {label}: {med:.1f} accepted/min ({med / first:.3f}x)")


if __name__ == "__main__":
    main()
