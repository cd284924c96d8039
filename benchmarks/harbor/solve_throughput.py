"""Rollouts per minute of ``taskfactory solve`` with a scripted replay agent.

    .venv/bin/python benchmarks/harbor/solve_throughput.py --data DATA [--k 4] [--workers 4]
        [--repeat 3] [--where SQL] [--harbor PATH [--harbor-concurrency 2]]

The agent is a real OpenAI-compatible HTTP server in this process (the test suite's
scripted server) that replays each task's reference ``terminal`` trajectory, one tool call
per turn, then answers: so the time measured is the loop's own (a fresh sandbox per
attempt, the realization, one request and one command per turn, the verifier, the
reference run for the reward-hack comparison, the shard commit), not a model's.  Each
repeat solves a fresh copy of ``DATA`` (``solve`` writes into it) as the CLI, Prefect
flow included; one uncounted warm-up (k = 1) builds the images.  Prints each run's attempts,
solved share and attempts per minute, the median, and the median attempt's time split
(endpoint seconds vs the rest) read back from ``rollouts``.  Every attempt must be solved,
else the script exits 1.

With ``--harbor``, the same tasks are exported as Harbor folders and Harbor's own runner
does the same work with its oracle agent (``harbor run -a oracle -k K``, docker
environment), once, after the solve repeats: its attempts per minute, and the ratio of
solve's median to it.  Every oracle trial must score 1, else the script exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harbor_tools import export, find_harbor, harbor_job  # noqa: E402

from tasks.dataset import Dataset  # noqa: E402
from tasks.exports.harbor.source import load_rows  # noqa: E402
from tests.support.openai_server import Behaviour, OpenAIServer  # noqa: E402
from tests.support.scripted_agents import reference_calls, replay  # noqa: E402


def replayer(data: Path) -> Behaviour:
    """The replay agent of every task in ``data``, chosen by the instruction it is sent."""
    calls = {instruction: reference_calls(messages) for instruction, messages in
             Dataset.open(data).rows(
                 "select t.instruction, j.messages from tasks t join trajectories j using "
                 "(task_id) where j.action_space = 'terminal' and j.supervision = 'masked'")}
    return Behaviour(message=lambda body: replay(calls[body["messages"][1]["content"]])(body))


def solve_once(data: Path, srv: OpenAIServer, args: argparse.Namespace,
               k: int | None = None) -> tuple[float, Path]:
    """Seconds of one ``taskfactory solve`` over a fresh copy of ``data``; the copy."""
    copy = Path(tempfile.mkdtemp(prefix="solve-bench-")) / "data"
    shutil.copytree(data, copy)
    command = [sys.executable, "-m", "flows.cli", "solve", "--data", str(copy), "--k",
               str(k or args.k), "--workers", str(args.workers), "--base-url", srv.base_url,
               "--model", "replayer"] + (["--where", args.where] if args.where else [])
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "OPENAI_API_KEY": "sk-bench"})
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"solve failed: {done.stderr[-2000:]}")
    return seconds, copy


def harbor_rate(data: Path, args: argparse.Namespace) -> tuple[float, int]:
    """Harbor's oracle on the tasks ``solve`` took, k attempts each: (attempts per
    minute, trials that did not score 1)."""
    harbor = find_harbor(args.harbor)
    work = Path(tempfile.mkdtemp(prefix="solve-bench-harbor-"))
    try:
        export(load_rows(data, args.where), work / "tasks", [], data)
        seconds, rewards, tail = harbor_job(harbor, work / "tasks", "oracle", work / "jobs",
                                            "oracle", args.harbor_concurrency, args.k)
        if not rewards:
            sys.exit(f"harbor run produced no trials: {tail}")
        rate = len(rewards) / seconds * 60
        failed = sum(r != 1 for r in rewards.values())
        print(f"harbor oracle: {len(rewards)} attempts in {seconds:.1f} s "
              f"(-n {args.harbor_concurrency}): {rate:.1f} attempts/min, "
              f"{len(rewards) - failed} scored 1")
        return rate, failed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--where")
    p.add_argument("--harbor", help="the harbor executable: also time Harbor's oracle")
    p.add_argument("--harbor-concurrency", type=int, default=2)
    args = p.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    rates, failed = [], 0
    with OpenAIServer(replayer(args.data)) as srv:
        _, warm = solve_once(args.data, srv, args, k=1)
        shutil.rmtree(warm.parent)
        for i in range(args.repeat):
            seconds, copy = solve_once(args.data, srv, args)
            _, rows = Dataset.open(copy).query(
                "select count(*), avg(reward), median(total_s), median(llm_s) from rollouts")
            n, solved, total_s, llm_s = rows[0]
            failed += round(n * (1 - solved))
            rate = n / seconds * 60
            rates.append(rate)
            print(f"run {i + 1}: {n} attempts in {seconds:.1f} s (Prefect start included): "
                  f"{rate:.1f} attempts/min, solved {solved:.0%}; median attempt "
                  f"{total_s:.2f} s, of which endpoint {llm_s:.2f} s")
            shutil.rmtree(copy.parent)
    median = statistics.median(rates)
    print(f"median: {median:.1f} attempts/min (k={args.k}, workers={args.workers})")
    if args.harbor:
        rate, harbor_failed = harbor_rate(args.data, args)
        print(f"solve / harbor oracle: {median / rate:.1f}x attempts per minute")
        failed += harbor_failed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
