"""Planning speed: workflow graphs per second on one core, per ecosystem.

    .venv/bin/python benchmarks/planning.py [--n 1000] [--repeat 5] [ecosystem ...]

Planning is pure Python (no sandbox, no Prefect), so one process measures one core.
Each repeat plans ``--n`` graphs with ``plan_graph`` (no de-duplication) and, separately,
``plan_candidates`` (with re-planning of duplicate fingerprints); medians are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.ecosystems import builtin_names, load_ecosystem  # noqa: E402
from tasks.plan.planner import candidate_seed, plan_candidates, plan_graph  # noqa: E402


def rate(fn, n: int, repeat: int) -> float:
    rates = []
    for r in range(repeat):
        t0 = time.perf_counter()
        fn(r)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ecosystems", nargs="*", default=builtin_names())
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'ecosystem':<12} {'graphs/s (plan_graph)':>22} {'graphs/s (deduplicated)':>24}")
    for name in args.ecosystems:
        eco = load_ecosystem(name)
        raw = rate(lambda r, eco=eco: [plan_graph(eco, candidate_seed(r, i))
                                       for i in range(args.n)], args.n, args.repeat)
        dedup = rate(lambda r, eco=eco: plan_candidates(eco, args.n, r), args.n, args.repeat)
        print(f"{name:<12} {raw:>22.0f} {dedup:>24.0f}")


if __name__ == "__main__":
    main()
