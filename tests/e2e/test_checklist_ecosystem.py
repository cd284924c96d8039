"""The acceptance test of a user ecosystem written from the checklist of
docs/ecosystem-reference.md (:mod:`tests.support.checklist_ecosystem`: the inventory
fixture plus discovery, a describer, an injector that plants a flipped sign, scenarios)
in a folder outside the repository, used as a new user would, on Docker:

- ``check-ecosystem`` passes;
- ``run --tasks 30`` gives at least 25% fix tasks and at least 70% needing observation;
- the folder is then edited, and the dataset still exports and passes ``check-harbor``
  without ``--ecosystem-dir`` (from the snapshot the run kept); the edited folder given
  explicitly is still refused.
"""

from pathlib import Path

import pytest

from tests.support.checklist_ecosystem import write_ecosystem

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    made = write_ecosystem(tmp_path_factory.mktemp("user") / "stockroom")
    assert not made.resolve().is_relative_to(Path.cwd().resolve())
    return made


@pytest.fixture(scope="module")
def made(prefect_api_url, folder, tmp_path_factory) -> tuple[Path, dict[str, tuple[int, int]]]:
    """The dataset of a 30-task run, and (tasks, needing observation) by kind."""
    from tests.support.fault_dataset import run_cli

    data = tmp_path_factory.mktemp("stockroom-data") / "data"
    proc = run_cli(prefect_api_url, "run", "--ecosystem", folder, "--tasks", 30, "--seed", 5,
                   "--backend", "docker", "--data", data)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_cli(prefect_api_url, "query", "select kind, count(*), count(*) filter "
                   "(needs_observation) from tasks group by 1", "--data", data,
                   "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(",") for line in proc.stdout.strip().splitlines()[1:]]
    return data, {kind: (int(n), int(obs)) for kind, n, obs in rows}


def test_check_ecosystem_passes(cli, folder):
    proc = cli("check-ecosystem", folder, "--backend", "docker")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passes: it makes valid tasks" in proc.stdout
    assert not [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]


def test_a_run_of_30_has_fix_tasks_and_tasks_that_need_observation(made):
    _, kinds = made
    total = sum(n for n, _ in kinds.values())
    fix = kinds.get("fix", (0, 0))[0]
    observed = sum(obs for _, obs in kinds.values())
    assert total >= 20, kinds
    assert fix / total >= 0.25, kinds
    assert observed / total >= 0.70, kinds


def test_the_edited_folder_exports_and_checks_from_the_snapshot(cli, made, folder, tmp_path):
    data, _ = made
    (snapshot,) = (data / "ecosystems").iterdir()
    assert snapshot.name.startswith("stockroom-")
    with (folder / "ecosystem.yaml").open("a") as f:
        f.write("\n# edited after the run\n")
    (folder / "seed.py").write_text((folder / "seed.py").read_text().replace(
        "rng.randint(0, 120)", "rng.randint(0, 90)"))
    one_each = ("task_id in (select min(task_id) from tasks where kind = 'fix' union all "
                "select min(task_id) from tasks where kind = 'build')")
    out = tmp_path / "out"
    proc = cli("export", "harbor", "--data", data, "--out", out, "--where", one_each)
    assert proc.returncode == 0, proc.stderr
    assert len([p for p in out.iterdir() if (p / "task.toml").is_file()]) == 2
    proc = cli("check-harbor", out, "--data", data, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed, 0 failed" in proc.stdout
    proc = cli("export", "harbor", "--data", data, "--out", tmp_path / "again", "--where",
               one_each, "--ecosystem-dir", folder)
    assert proc.returncode == 2 and "pass the ecosystem folder the task was generated with" \
        in proc.stderr, proc.stderr
    assert not (tmp_path / "again").exists()
