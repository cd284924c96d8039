"""Rendering cost per accepted task: instruction, preservation checks, six trajectories.

Re-renders the tasks of an existing dataset in one process (one core): the required
literals, the instruction, both preservation checks and the six trajectory rows with
their grounding checks -- everything the pipeline does after the gate, in pure Python.

    .venv/bin/python benchmarks/rendering.py --data data --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from environments.ecosystems import load_ecosystem
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.dataset.query import connect
from tasks.instruct.instruction import context_text, render_instruction
from tasks.instruct.preserve import check_items_preserved, check_preserved, required_literals
from tasks.trajectories.render import render_trajectories


def load(data: Path) -> list[tuple]:
    con = connect(data)
    rows = con.execute("select ecosystem, seed, graph_json, trace_json, checks_json, "
                       "instruction_style from tasks").fetchall()
    ecosystems: dict = {}
    return [(ecosystems.setdefault(e, load_ecosystem(e)), seed,
             WorkflowGraph.model_validate_json(g), Trace.model_validate_json(t),
             [Check(**c) for c in json.loads(checks)], style)
            for e, seed, g, t, checks, style in rows]


def render_all(tasks: list[tuple]) -> float:
    t0 = time.perf_counter()
    for eco, seed, graph, trace, checks, style in tasks:
        required = required_literals(eco.spec, graph, trace, checks)
        instruction = render_instruction(eco, graph, trace, seed, style)
        check_preserved(instruction.text, required)
        check_items_preserved(instruction.items, required, context_text(eco, style))
        render_trajectories(eco, graph, "task", "run", instruction, trace, seed)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tasks = load(args.data)
    if not tasks:
        raise SystemExit(f"no tasks in {args.data}")
    render_all(tasks)  # warm-up: template compilation, imports
    runs = [render_all(tasks) for _ in range(args.repeat)]
    per_task = statistics.median(runs) / len(tasks)
    print(f"{len(tasks)} tasks x {args.repeat} runs: median {1000 * per_task:.2f} ms per task "
          f"on one core ({1 / per_task:.0f} tasks/s)")


if __name__ == "__main__":
    main()
