"""Accepted tasks per minute and where the time goes; how it scales with concurrency.

    .venv/bin/python benchmarks/throughput.py [--tasks 300] [--repeat 3] [--workers 4]
    .venv/bin/python benchmarks/throughput.py --tasks 120 --workers 1,2,4,8   # scaling

Runs the factory flow in one process (the Prefect API server starts once, during an
uncounted warm-up run), then ``--repeat`` rounds of counted runs with different seeds;
with several ``--workers`` values, each round runs every value in turn (interleaved, so
drift in the machine's speed hits all alike).  Prints per worker count the median
accepted tasks per minute and its ratio to the first count, and for the median run the
per-candidate time split by phase read back from the ``attempts`` table, the gate's
time per control, and the share of Docker sandboxes opened in a kept container.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

from environments.docker.backend import POOL  # noqa: E402
from flows.factory import run_factory  # noqa: E402
from flows.settings import RunSettings  # noqa: E402
from tasks.dataset.query import run_query  # noqa: E402
from tasks.gate.gate import TIMING  # noqa: E402


class ControlTimes(logging.Handler):
    """Collects the gate's timing records (``tasks.gate.gate.TIMING``): per control, and
    per verb of the host inside the controls."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.verbs: dict[str, list[float]] = defaultdict(list)

    def emit(self, record: logging.LogRecord) -> None:
        verb = getattr(record, "verb", None)
        times = self.verbs[verb] if verb else self.ms[record.control]  # type: ignore[attr-defined]
        times.append(record.ms)  # type: ignore[attr-defined]


class PoolHits(logging.Handler):
    """Counts the Docker sandboxes opened in a kept container and in a new one
    (``environments.docker.backend.POOL``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.opened: dict[str, int] = defaultdict(int)

    def emit(self, record: logging.LogRecord) -> None:
        self.opened[record.pool] += 1  # type: ignore[attr-defined]

PHASES = ["sandbox_s", "execute_s", "gate_s", "render_s"]
LABELS = {"sandbox_s": "sandbox start + seed", "execute_s": "execution + probes",
          "gate_s": "gate", "render_s": "rendering",
          "write_s": "writing shards", "overhead_s": "orchestration + idle"}


def one_run(tasks: int, seed: int, backend: str, workers: int) -> dict:
    times, pool = ControlTimes(), PoolHits()
    for logger, handler in ((TIMING, times), (POOL, pool)):
        # the records go to the counting handler only: printed or shipped to Prefect's
        # API, a thousand debug lines a run would be measured as the pipeline's time
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        try:
            summary = run_factory(RunSettings(tasks=tasks, seed=seed, data=Path(tmp),
                                              backend=backend, workers=workers))
        finally:
            for logger, handler in ((TIMING, times), (POOL, pool)):
                logger.removeHandler(handler)
                logger.propagate = True
        wall = time.perf_counter() - t0
        sums = ", ".join(f"sum({p})" for p in PHASES)
        _, rows = run_query(Path(tmp), f"select {sums}, sum(total_s), sum(sandboxes) "
                                       "from attempts")
    phase = dict(zip(PHASES, rows[0][:4], strict=True))
    busy = rows[0][4] + summary.write_s
    return {"wall_s": wall, "accepted": summary.accepted, "candidates": summary.candidates,
            "per_min": summary.accepted / wall * 60, "write_s": summary.write_s,
            "overhead_s": max(0.0, wall * workers - busy), "sandboxes": rows[0][5],
            "controls": dict(times.ms), "verbs": dict(times.verbs), "pool": dict(pool.opened),
            **phase}


def report_split(run: dict, workers: int) -> None:
    print(f"time split of the median run at {workers} workers (candidate-seconds summed over "
          "worker slots; orchestration + idle = wall x workers - time inside candidates):")
    total = sum(run[p] for p in LABELS)
    for p, label in LABELS.items():
        print(f"  {label:<22} {run[p]:7.2f} s  {100 * run[p] / total:5.1f}%  "
              f"{1000 * run[p] / run['candidates']:6.0f} ms/candidate")
    print(f"gate per accepted task: {run['gate_s'] / max(1, run['accepted']):.2f} s; "
          f"sandboxes per candidate: {run['sandboxes'] / run['candidates']:.2f} "
          "(one for execution and the gate; repaired traces: + the gate's fresh one "
          "and rebuilds for added packages)")
    opened = run["pool"]
    if opened:
        hits = opened.get("reused", 0)
        print(f"sandbox pool: {hits} of {sum(opened.values())} Docker sandboxes opened in a "
              f"kept container ({100 * hits / sum(opened.values()):.0f}% hit rate)")
    total_ms = sum(sum(v) for v in run["controls"].values())
    print("the gate per control (ms per candidate: summed over the run / candidates; share of "
          "the time inside controls; runs, and median ms per run):")
    report_times(run["controls"], run["candidates"], total_ms, "runs")
    print("the gate per verb of the host inside the controls (restore: the start state again, "
          "with the cleanup after the last verifier; solve: a script as the agent; apply: a "
          "shortcut; verify: the verifier; the rest of the controls' time is the host's own):")
    report_times(run["verbs"], run["candidates"], total_ms, "calls")


def report_times(times: dict[str, list[float]], candidates: int, total_ms: float,
                 unit: str) -> None:
    """One line per name: ms per candidate, share of ``total_ms``, count, median ms."""
    for name, ms in sorted(times.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {name:<12} {sum(ms) / candidates:7.1f} ms/candidate  "
              f"{100 * sum(ms) / max(total_ms, 1e-9):5.1f}%  {len(ms):5d} {unit:<5} "
              f"{statistics.median(ms):6.1f} ms/{unit[:-1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="docker")
    ap.add_argument("--workers", default="4", help="one count, or several: 1,2,4,8")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    print(f"warm-up run (starts Prefect), then {args.repeat} rounds of {args.tasks} candidates "
          f"on {args.backend} with {counts} workers")
    one_run(min(args.tasks, 8), 999, args.backend, counts[0])
    runs: dict[int, list[dict]] = {w: [] for w in counts}
    for seed in range(1, args.repeat + 1):
        for w in counts:
            r = one_run(args.tasks, seed, args.backend, w)
            runs[w].append(r)
            print(f"  seed {seed}, {w} workers: {r['accepted']}/{r['candidates']} accepted in "
                  f"{r['wall_s']:.1f} s = {r['per_min']:.1f} accepted/min")
    base = statistics.median(r["per_min"] for r in runs[counts[0]])
    for w in counts:
        med = statistics.median(r["per_min"] for r in runs[w])
        print(f"median at {w} workers: {med:.1f} accepted tasks/min "
              f"({med / base:.2f}x of {counts[0]} workers)")
    for w in counts:
        ordered = sorted(runs[w], key=lambda r: r["per_min"])
        report_split(ordered[len(ordered) // 2], w)


if __name__ == "__main__":
    main()
