"""Peak memory of a run against its size: memory must not grow with the number of tasks.

    .venv/bin/python benchmarks/memory.py [--small 200] [--large 2000] [--repeat 3]
                                          [--backend local] [--ecosystem files,sql]

Starts one Prefect API server (the test harness), then runs the factory flow in a fresh
child process per measurement, alternating small and large runs, and reads each child's
peak resident set size (``ru_maxrss``) at its end.  Prints every run, the median peak per
size and the ratio large / small.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


def child(tasks: int, seed: int, backend: str, ecosystems: list[str], workers: int) -> None:
    from flows.factory import run_factory
    from flows.settings import RunSettings

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = run_factory(RunSettings(tasks=tasks, seed=seed, data=Path(tmp),
                                          backend=backend, ecosystems=ecosystems,
                                          workers=workers))
        wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"tasks": tasks, "accepted": summary.accepted, "peak_mb": peak_mb,
                      "wall_s": wall}))


def measure(args: argparse.Namespace, tasks: int, seed: int, api_url: str) -> dict:
    cmd = [sys.executable, __file__, "--child", str(tasks), "--seed", str(seed),
           "--backend", args.backend, "--ecosystem", args.ecosystem,
           "--workers", str(args.workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PREFECT_API_URL": api_url})
    if proc.returncode != 0:
        raise SystemExit(f"run of {tasks} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=200)
    ap.add_argument("--large", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--repeat-small", type=int, help="runs of the small size (default --repeat)")
    ap.add_argument("--backend", default="local")
    ap.add_argument("--ecosystem", default="files,sql")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.seed, args.backend, args.ecosystem.split(","), args.workers)
        return
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    repeats = {args.small: args.repeat_small or args.repeat, args.large: args.repeat}
    print(f"{repeats[args.small]} x {args.small} and {args.repeat} x {args.large} candidates of "
          f"{args.ecosystem} on {args.backend}, {args.workers} workers, one child process per run")
    peaks: dict[int, list[float]] = {args.small: [], args.large: []}
    with prefect_test_harness(server_startup_timeout=120):
        url = PREFECT_API_URL.value()
        for i in range(max(repeats.values())):
            for n in (n for n in (args.small, args.large) if i < repeats[n]):
                r = measure(args, n, args.seed + i, url)
                peaks[n].append(r["peak_mb"])
                print(f"  {n:>6} candidates: peak RSS {r['peak_mb']:7.1f} MB, "
                      f"{r['accepted']} accepted, {r['wall_s']:.0f} s", flush=True)
    small, large = (statistics.median(peaks[n]) for n in (args.small, args.large))
    print(f"median peak RSS: {args.small} candidates {small:.1f} MB, {args.large} candidates "
          f"{large:.1f} MB, ratio {large / small:.3f}")


if __name__ == "__main__":
    main()
