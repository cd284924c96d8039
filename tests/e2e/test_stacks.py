"""Stacks run end to end on the real engine: every accepted task crosses the stack's
members, and the dataset keeps a snapshot of a user ecosystem a stack used."""

import duckdb
import pytest

from environments.ecosystems import load_ecosystem

LEDGERS = "tests/fixtures/stacks/ledgers.yaml"


def _accepted_tools(data) -> list[tuple[str, list[str]]]:
    return duckdb.sql(f"select ecosystem, tools from read_parquet('{data}/attempts/**/*.parquet')"
                      " where status = 'accepted'").fetchall()


@pytest.mark.docker
@pytest.mark.parametrize("ref,tasks,least", [(LEDGERS, 6, 5), ("files+git+sql", 8, 6)])
def test_a_stack_makes_tasks_across_its_members(cli, tmp_path, ref, tasks, least):
    proc = cli("run", "--ecosystem", ref, "--tasks", tasks, "--seed", 3, "--backend", "docker",
               "--data", tmp_path)
    assert proc.returncode == 0, proc.stderr
    accepted = _accepted_tools(tmp_path)
    eco = load_ecosystem(ref)
    assert len(accepted) >= least, proc.stdout
    assert {name for name, _ in accepted} == {eco.name}
    assert all(eco.crosses(tools) for _, tools in accepted), accepted
    kept = sorted(p.name.split("-")[0] for p in (tmp_path / "ecosystems").glob("*-*"))
    assert kept == ([] if eco.builtin else ["inventory"])
