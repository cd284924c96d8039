"""Validating exported tasks: taskfactory's own gate versus Harbor's runner, side by side.

    .venv/bin/python benchmarks/harbor/harbor_vs_gate.py --data DATA [--n 24] [--repeat 3]
        [--concurrency 4] [--harbor PATH]      (or TASKFACTORY_HARBOR=PATH)

The same ``--n`` tasks (spread over the ecosystems) are exported once, then validated
both ways, each ``--repeat`` times after one uncounted warm-up of each (which builds the
images both sides reuse), alternating sides:

- **gate**: per task, the gate's machinery: a fresh docker sandbox of the ecosystem's
  image realized from the seed (seed files, setup, additions, service), the verifier on
  the untouched state (must be 0), ``solve.sh``, the verifier again (must be 1);
- **harbor**: ``harbor run -a oracle`` then ``harbor run -a nop`` over the exported
  folders (docker environment; every trial its own compose project).

Both sides run ``--concurrency`` tasks at a time.  Prints each run, the medians, tasks
validated per minute on each side and their ratio (gate / harbor); any task that did not
score as required is listed, and the script exits 1.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harbor_tools import export, find_harbor, harbor_job, parser, sample  # noqa: E402

from environments.docker.config import DockerConfig  # noqa: E402
from environments.docker.images import ecosystem_image  # noqa: E402
from flows.run.providers import close_run, provider_for  # noqa: E402
from tasks.execute.realize import LiveEnvironment  # noqa: E402
from tasks.exports.harbor.environment import base_image  # noqa: E402
from tasks.exports.harbor.source import ExportTask  # noqa: E402
from tasks.gate.gate import run_solution  # noqa: E402
from tasks.verify.verifier import run_verifier  # noqa: E402


def gate_one(task: ExportTask, run_id: str) -> tuple[float, float]:
    """(nop reward, reference reward) of one task in a fresh gate sandbox."""
    additions, row = task.trace.environment, task.row
    config = ecosystem_image(task.eco, DockerConfig(image=base_image(row)),
                             tuple(additions.packages))
    provider = provider_for(config, run_id)
    with LiveEnvironment(task.eco, row.seed, lambda _p: provider.sandbox(), additions,
                         row.fault) as env:
        nop = run_verifier(env.sandbox, row.verifier_py).reward
        solved = run_solution(env.sandbox, row.solution_sh)
        reference = run_verifier(env.sandbox, row.verifier_py).reward if solved == 0 else 0.0
    return nop, reference


def gate_side(tasks: list[ExportTask], concurrency: int, label: str) -> tuple[float, list[str]]:
    run_id = f"bench-harbor-{os.getpid()}-{label}"
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda t: gate_one(t, run_id), tasks))
    finally:
        close_run(run_id)
    wrong = [f"{t.folder_name}: nop {n}, reference {r}" for t, (n, r) in zip(tasks, results,
                                                                                strict=True)
             if (n, r) != (0.0, 1.0)]
    return time.perf_counter() - t0, wrong


def harbor_side(harbor: str, folders: Path, names: list[str], jobs: Path, concurrency: int,
                label: str) -> tuple[float, list[str]]:
    s_oracle, oracle, tail_o = harbor_job(harbor, folders, "oracle", jobs, f"oracle-{label}",
                                          concurrency)
    s_nop, nop, tail_n = harbor_job(harbor, folders, "nop", jobs, f"nop-{label}", concurrency)
    wrong = [f"{n}: oracle {oracle.get(n)}, nop {nop.get(n)}" for n in names
             if oracle.get(n) != 1 or nop.get(n) != 0]
    if wrong and not oracle and not nop:
        wrong.append(f"harbor printed: {tail_o[-600:]} {tail_n[-600:]}")
    return s_oracle + s_nop, wrong


def main() -> None:
    ap = parser(__doc__, n=24)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    harbor = find_harbor(args.harbor)
    with tempfile.TemporaryDirectory(prefix="harbor-vs-gate-") as tmp:
        folders, jobs = Path(tmp) / "tasks", Path(tmp) / "jobs"
        tasks = [t for t, _ in export(sample(args.data, args.n), folders, args.ecosystem_dir,
                                               args.data)]
        names = [t.folder_name for t in tasks]
        print(f"{len(tasks)} tasks, concurrency {args.concurrency}: one warm-up of each side, "
              f"then {args.repeat} runs of each")
        gate_side(tasks, args.concurrency, "warm")
        harbor_side(harbor, folders, names, jobs, args.concurrency, "warm")
        runs, problems = [], set()
        for k in range(args.repeat):
            g, g_wrong = gate_side(tasks, args.concurrency, str(k))
            h, h_wrong = harbor_side(harbor, folders, names, jobs, args.concurrency, str(k))
            problems |= {f"gate   {w}" for w in g_wrong} | {f"harbor {w}" for w in h_wrong}
            runs.append((g, h))
            print(f"  run {k + 1}: gate {g:7.1f} s ({60 * len(tasks) / g:6.1f} tasks/min)   "
                  f"harbor {h:7.1f} s ({60 * len(tasks) / h:6.1f} tasks/min)", flush=True)
    g, h = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    print(f"median: gate {60 * len(tasks) / g:.1f} tasks/min, harbor {60 * len(tasks) / h:.1f} "
          f"tasks/min; ratio gate/harbor {h / g:.2f}")
    for p in sorted(problems):
        print(f"  did not score as required: {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
