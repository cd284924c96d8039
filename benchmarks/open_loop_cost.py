"""What the open-loop control adds to the gate when it runs: one accepted ``service`` task
gated with its instruction (every value written: the control is not run again) and with
its ticket's id left out (the control runs: one more solve and score), alternating.

    .venv/bin/python benchmarks/open_loop_cost.py [--repeat 5]

Prints each gate's seconds and the median difference per task.
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
from flows.run.candidate import build_candidate, ecosystem, sandbox_opener  # noqa: E402
from flows.run.providers import close_run  # noqa: E402
from schemas.trace import Trace  # noqa: E402
from schemas.verifier import Check  # noqa: E402
from tasks.execute.realize import LiveEnvironment, probe  # noqa: E402
from tasks.gate.gate import run_gate, run_solution  # noqa: E402
from tasks.plan.planner import plan_candidates  # noqa: E402

RUN = "bench-open-loop"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    eco = ecosystem("service")
    try:
        for candidate in plan_candidates(eco, 12, 7, {1: 1.0})[0]:
            row = build_candidate(candidate, "service", DockerConfig(), RUN).task
            trace = Trace.model_validate_json(row.trace_json) if row else None
            st = trace.steps[-1] if trace else None
            if row and st and "ticket" in st.args and f"`{st.args['ticket']}`" in row.instruction \
                    and not eco.spec.tool(st.tool).creates:
                break
        else:
            raise SystemExit("no service task changes a sampled ticket")
        checks = [Check.model_validate(c) for c in json.loads(row.checks_json)]
        unnamed = row.instruction.replace(f"`{st.args['ticket']}`", "the ticket in question")
        opener = sandbox_opener(eco, DockerConfig(), RUN, candidate)
        with LiveEnvironment(eco, row.seed, opener, trace.environment, row.fault) as env:
            run_solution(env.sandbox, row.solution_sh)
            after = probe(env.sandbox, eco)
            times: dict[str, list[float]] = {"written": [], "unwritten": []}
            for _ in range(args.repeat):
                for name, text in (("written", row.instruction), ("unwritten", unnamed)):
                    t0 = time.perf_counter()
                    gate = run_gate(env, eco, trace, checks, text, row.solution_sh,
                                    row.verifier_py, after)
                    times[name].append(time.perf_counter() - t0)
                    print(f"  {name}: open-loop reward {gate.open_loop_reward}, "
                          f"gate {times[name][-1]:.3f} s")
    finally:
        close_run(RUN)
    diff = [u - w for w, u in zip(times["written"], times["unwritten"], strict=True)]
    print(f"median gate: {statistics.median(times['written']):.3f} s written, "
          f"{statistics.median(times['unwritten']):.3f} s with the open-loop run; "
          f"median difference {statistics.median(diff) * 1000:.0f} ms per task")


if __name__ == "__main__":
    main()
