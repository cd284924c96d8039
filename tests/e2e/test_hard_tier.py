"""``--difficulty hard`` end to end on the real engine: every accepted task records its
tier, holds three looked-up values, was made on the state ten times the size, and the
open-loop solver fails it; stats report the tier, and a Harbor export rebuilds the same
environment and says the difficulty."""

import json
import tomllib

import duckdb
import pytest

from environments.ecosystems import load_ecosystem
from schemas.trace import Trace
from tasks.execute.realize import env_digest
from tasks.plan.lookups import looked_up
from tasks.plan.tiers import HARD_MIN_LOOKUPS, HARD_SCALE


def _rows(data, table: str, columns: str) -> list[tuple]:
    return duckdb.sql(f"select {columns} from read_parquet('{data}/{table}/**/*.parquet')"
                      ).fetchall()


@pytest.mark.docker
def test_hard_tasks_need_three_lookups_over_a_large_state(cli, tmp_path):
    data = tmp_path / "d"
    proc = cli("run", "--difficulty", "hard", "--ecosystem", "service", "--tasks", 5,
               "--seed", 3, "--backend", "docker", "--data", data, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    eco = load_ecosystem("service")
    assert {t for (t,) in _rows(data, "attempts", "tier")} == {"hard"}
    tasks = _rows(data, "tasks", "tier, seed, graph_json, trace_json, env_digest, "
                                 "gate.open_loop_reward, kind")
    assert len(tasks) >= 4, proc.stdout
    for tier, seed, graph, trace, digest, open_loop, kind in tasks:
        assert (tier, kind, open_loop) == ("hard", "build", 0.0)
        assert looked_up(eco, json.loads(graph)) >= HARD_MIN_LOOKUPS
        environment = Trace.model_validate_json(trace).environment
        assert digest == env_digest(eco.seed_state(seed, scale=HARD_SCALE), environment)
        assert digest != env_digest(eco.seed_state(seed), environment)

    stats = cli("stats", "--data", data)
    assert stats.returncode == 0, stats.stderr
    assert f"| hard | 5 | {len(tasks)} |" in stats.stdout
    assert "| service | build | hard |" in stats.stdout

    out = tmp_path / "harbor"
    export = cli("export", "harbor", "--data", data, "--out", out)
    assert export.returncode == 0, export.stderr
    folders = [p for p in out.iterdir() if (p / "task.toml").exists()]
    assert len(folders) == len(tasks)
    for folder in folders:
        toml = tomllib.loads((folder / "task.toml").read_text())
        assert toml["metadata"]["difficulty"] == "hard"
