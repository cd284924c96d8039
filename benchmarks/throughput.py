"""Accepted tasks per minute and where the time goes, on one backend.

    .venv/bin/python benchmarks/throughput.py [--tasks 60] [--repeat 3] [--backend docker]

Runs the factory flow in one process (the Prefect API server starts once, during an
uncounted warm-up run), then ``--repeat`` counted runs with different seeds.  Prints the
median accepted tasks per minute and the per-candidate time split by phase, read back
from the ``attempts`` table of each run's dataset.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

from flows.factory import run_factory  # noqa: E402
from flows.query import run_query  # noqa: E402
from flows.settings import RunSettings  # noqa: E402

PHASES = ["sandbox_s", "execute_s", "gate_s", "render_s"]


def one_run(tasks: int, seed: int, backend: str, workers: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = run_factory(RunSettings(tasks=tasks, seed=seed, data=Path(tmp),
                                          backend=backend, workers=workers))
        wall = time.perf_counter() - t0
        sums = ", ".join(f"sum({p})" for p in PHASES)
        _, rows = run_query(Path(tmp), f"select {sums}, sum(sandboxes) from attempts")
    phase = dict(zip(PHASES, rows[0][:4], strict=True))
    return {"wall_s": wall, "accepted": summary.accepted, "candidates": summary.candidates,
            "per_min": summary.accepted / wall * 60, "write_s": summary.write_s,
            "sandboxes": rows[0][4], **phase}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="docker")
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    print(f"warm-up run (starts Prefect), then {args.repeat} runs of {args.tasks} candidates "
          f"on {args.backend} with {args.workers} workers")
    one_run(min(args.tasks, 4), 999, args.backend, args.workers)
    runs = [one_run(args.tasks, seed, args.backend, args.workers)
            for seed in range(1, args.repeat + 1)]
    for r in runs:
        print(f"  run: {r['accepted']}/{r['candidates']} accepted in {r['wall_s']:.1f} s "
              f"= {r['per_min']:.1f} accepted/min")
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"median: {med['per_min']:.1f} accepted tasks/min "
          f"({med['accepted']:.0f}/{med['candidates']:.0f} accepted, {med['wall_s']:.1f} s wall)")
    total = sum(med[p] for p in PHASES) + med["write_s"]
    print("time split (candidate-seconds summed over concurrent workers, median run):")
    for p in [*PHASES, "write_s"]:
        label = {"sandbox_s": "sandbox start + seed", "execute_s": "execution + probes",
                 "gate_s": "gate (fresh sandbox)", "render_s": "rendering",
                 "write_s": "writing shards"}[p]
        print(f"  {label:<22} {med[p]:7.2f} s  {100 * med[p] / total:5.1f}%  "
              f"{1000 * med[p] / med['candidates']:6.0f} ms/candidate")
    print(f"gate per accepted task: {med['gate_s'] / max(1, med['accepted']):.2f} s; "
          f"sandboxes per candidate: {med['sandboxes'] / med['candidates']:.2f} "
          f"(execution + the gate's fresh one, + rebuilds for added packages)")


if __name__ == "__main__":
    main()
