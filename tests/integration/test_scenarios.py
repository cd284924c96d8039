"""A scenario declared in a user ecosystem is honoured end to end: its graphs grow with
its tools only, the accepted task and its attempt record it, and the instruction opens
with one of its motivations.

The ecosystem is a copy of the ``inventory`` fixture (stock ledgers as files) with two
scenarios added, built on the local backend (the built-ins' scenarios run in Docker
throughout the suite).
"""

import os
import shutil
from pathlib import Path

import yaml

from environments.local.config import LocalConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from tasks.plan.planner import plan_candidates

INVENTORY = Path("tests/fixtures/ecosystems/inventory")
RUN_ID = f"itest-scenarios-{os.getpid()}"
SCENARIOS = [
    {"name": "purchasing_review", "weight": 2,
     "motivations": ["Purchasing plans this week's orders and wants to see what runs low.",
                     "The buyers meet tomorrow to decide what to reorder."],
     "tools": {"low_stock": 2, "total_units": 1, "quantity_of": 1}},
    {"name": "warehouse_merge",
     "motivations": ["Two warehouses are being combined into one."],
     "tools": {"merge_ledgers": 2, "low_stock": 1, "total_units": 1}},
]


def _inventory(tmp_path: Path) -> str:
    folder = tmp_path / "inventory"
    shutil.copytree(INVENTORY, folder)
    spec = yaml.safe_load((folder / "ecosystem.yaml").read_text())
    spec["scenarios"] = SCENARIOS
    (folder / "ecosystem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(folder)


def test_a_scenario_of_a_user_ecosystem_shapes_its_tasks(tmp_path):
    ref = _inventory(tmp_path)
    eco = ecosystem(ref)
    candidates, _ = plan_candidates(eco, 8, 4, off_scenario=0)
    by_name = {s["name"]: s for s in SCENARIOS}
    assert {c.graph.scenario for c in candidates} == set(by_name)
    for c in candidates:
        assert {s.tool for s in c.graph.steps} <= set(by_name[c.graph.scenario]["tools"])
    try:
        outcomes = [build_candidate(c, ref, LocalConfig(), RUN_ID) for c in candidates]
    finally:
        close_run(RUN_ID)
    tasks = [o.task for o in outcomes if o.task]
    assert len(tasks) >= 6, [(o.attempt.reason, o.attempt.detail) for o in outcomes]
    for o, c in zip(outcomes, candidates, strict=True):
        assert o.attempt.scenario == c.graph.scenario
    for task in tasks:
        motivations = by_name[task.scenario]["motivations"]
        first = task.instruction.split("\n\n")[0]
        assert first in motivations, task.instruction
        assert task.template_id.rsplit("/", 1)[1] == \
            f"{task.scenario}.m{motivations.index(first) + 1}"
    # outside any scenario: no motivation line, nothing recorded
    outside, _ = plan_candidates(eco, 2, 4, off_scenario=1)
    try:
        plain = [build_candidate(c, ref, LocalConfig(), RUN_ID).task for c in outside]
    finally:
        close_run(RUN_ID)
    every = {m for s in SCENARIOS for m in s["motivations"]}
    for task in filter(None, plain):
        assert task.scenario is None
        assert not any(m in task.instruction for m in every)
