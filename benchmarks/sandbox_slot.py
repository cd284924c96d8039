"""How much of a run's wall time the server's ``sandbox`` slot is held, with a limit of 1.

    .venv/bin/python benchmarks/sandbox_slot.py [--tasks 12] [--workers 4] [--repeat 3]
                                                [--backend docker] [--ecosystem files]
                                                [--api-url URL]

Starts a Prefect API server (or uses ``--api-url``), creates a ``sandbox`` global
concurrency limit of 1 on it, and runs ``taskfactory run`` as a subprocess ``--repeat``
times.  From each run's ``attempts`` table (every candidate's busy interval, ending at
``created_at`` and lasting ``total_s``) it prints the share of the wall time — first
candidate's start to last candidate's end — during which a candidate held the slot, the
most candidates that overlapped (must be 1), and the median and largest gap between one
candidate's end and the next one's start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

from tests.support.intervals import intervals, most_in_flight  # noqa: E402


def held_share(spans: list[tuple[float, float]]) -> dict[str, float]:
    """Busy time over wall time, the most overlapping candidates, and the idle gaps."""
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    busy = sum(e - s for s, e in spans)
    gaps = [max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:], strict=False)]
    return {"busy_s": busy, "wall_s": wall, "held": busy / wall, "most": most_in_flight(spans),
            "gap_median_s": statistics.median(gaps) if gaps else 0.0,
            "gap_max_s": max(gaps, default=0.0)}


def one_run(args: argparse.Namespace, api_url: str, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        proc = subprocess.run(
            [sys.executable, "-m", "flows.cli", "run", "--tasks", str(args.tasks),
             "--seed", str(seed), "--workers", str(args.workers), "--backend", args.backend,
             "--ecosystem", args.ecosystem, "--data", str(data)],
            cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "PREFECT_API_URL": api_url})
        if proc.returncode != 0:
            raise SystemExit(f"run failed:\n{proc.stderr[-3000:]}")
        return held_share(intervals(data))


def measure(args: argparse.Namespace, api_url: str) -> None:
    os.environ["PREFECT_API_URL"] = api_url  # before Prefect reads its settings
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        with contextlib.suppress(ObjectNotFound):
            client.delete_global_concurrency_limit_by_name("sandbox")
        client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name="sandbox", limit=1))
    print(f"{args.repeat} runs of {args.tasks} {args.ecosystem} candidates on {args.backend}, "
          f"--workers {args.workers}, server limit sandbox=1")
    shares = []
    try:
        for seed in range(1, args.repeat + 1):
            r = one_run(args, api_url, seed)
            shares.append(r["held"])
            print(f"seed {seed}: held {100 * r['held']:.1f}% ({r['busy_s']:.1f} s busy of "
                  f"{r['wall_s']:.1f} s wall), at most {r['most']} at once, gap median "
                  f"{1000 * r['gap_median_s']:.0f} ms, max {1000 * r['gap_max_s']:.0f} ms",
                  flush=True)
    finally:
        with get_client(sync_client=True) as client:
            client.delete_global_concurrency_limit_by_name("sandbox")
    print(f"median held share: {100 * statistics.median(shares):.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="docker")
    ap.add_argument("--ecosystem", default="files")
    ap.add_argument("--api-url", help="a running Prefect server (default: start one)")
    args = ap.parse_args()
    if args.api_url:
        measure(args, args.api_url)
        return
    from tests.support.prefect_server import prefect_server

    with tempfile.TemporaryDirectory() as tmp, prefect_server(Path(tmp) / "prefect") as url:
        measure(args, url)


if __name__ == "__main__":
    main()
