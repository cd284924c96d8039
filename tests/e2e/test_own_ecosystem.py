"""A user's ecosystem folder, not among the built-ins, planned and run with no change."""

import pytest

INVENTORY = "tests/fixtures/ecosystems/inventory"


@pytest.mark.docker
def test_run_a_user_ecosystem_folder(cli, tmp_path):
    proc = cli("run", "--ecosystem", INVENTORY, "--tasks", 8, "--seed", 3, "--backend", "docker",
               "--data", tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = cli("query", "select ecosystem, count(*) from tasks group by 1", "--data", tmp_path,
              "--format", "csv")
    (row,) = out.stdout.strip().splitlines()[1:]
    ecosystem, accepted = row.split(",")
    assert ecosystem == "inventory" and int(accepted) >= 7
