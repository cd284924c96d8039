"""Stacks: ecosystems joined into one workspace, planned across their members."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from environments.ecosystems import EcosystemError, default_refs, load_ecosystem
from environments.ecosystems.stack import StackError, compose
from flows.settings import RunSettings
from tasks.plan.planner import plan_candidates

LEDGERS = "tests/fixtures/stacks/ledgers.yaml"


def test_members_are_joined_in_name_order_into_one_ecosystem():
    eco = load_ecosystem("sql+files")
    assert eco.name == "files+sql" and [m.name for m in eco.members] == ["files", "sql"]
    assert load_ecosystem("files+sql") is eco  # one stack, loaded once
    files, sql = (load_ecosystem(n) for n in ("files", "sql"))
    assert {t.name for t in eco.spec.tools} == {t.name for t in files.spec.tools + sql.spec.tools}
    assert list(eco.spec.probe_sections) == ["files", "tables", "schema", "indexes"]
    assert eco.spec.probe_sections["files"] == files.spec.probe_sections["files"]
    assert [d.name for d in eco.spec.discovery].count("list_files") == 1
    seeded = eco.seed_state(5)
    assert set(seeded) == set(files.seed_state(5)) | set(sql.seed_state(5))
    assert eco.builtin and not eco.crosses(["csv_filter", "count_lines"])
    assert eco.crosses(["export_top_csv", "csv_filter"])


def test_a_members_fault_is_planted_in_the_stack_as_it_is_alone():
    eco, files = load_ecosystem("files+sql"), load_ecosystem("files")
    assert {i.name for i in eco.spec.faults.injectors} >= {"duplicated_rows", "negative_price"}
    alone, stacked = files.seed_state(3, "duplicated_rows"), eco.seed_state(3, "duplicated_rows")
    assert alone != files.seed_state(3)
    assert {p: stacked[p] for p in alone} == alone and set(stacked) - set(alone)


def test_a_service_keeps_its_support_files_where_it_runs_them():
    eco = load_ecosystem("service+sql")
    assert eco.spec.service is not None
    assert list(eco.support_files()) == ["service/server.py"]
    assert "/opt/taskfactory/service/server.py" in eco.spec.service.start


def test_each_setup_sees_the_seed_folder_as_it_would_alone(tmp_path):
    eco = load_ecosystem("files+git+sql")
    first, second = (m.spec.setup for m in eco.members if m.spec.setup)
    assert first and second and first in eco.spec.setup and second in eco.spec.setup
    stub = eco.spec.setup.replace(first, "ls .seed > first.txt && rm -rf .seed").replace(
        second, "ls .seed > second.txt && rm -rf .seed")
    (tmp_path / ".seed").mkdir()
    for name in ("build.sh", "shop.sql"):
        (tmp_path / ".seed" / name).write_text("x")
    subprocess.run(["bash", "-c", stub], cwd=tmp_path, check=True)
    assert (tmp_path / "first.txt").read_text() == (tmp_path / "second.txt").read_text() \
        == "build.sh\nshop.sql\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.txt", "second.txt"]


def test_the_probe_leaves_what_a_member_owns_out_of_the_others_sections(tmp_path):
    eco = load_ecosystem("files+sql")
    for path in ("data/orders.csv", "shop.db-journal", "out/report.txt", ".git/HEAD"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x\n")
    out = subprocess.run([sys.executable, "-"], input=eco.probe_source, text=True,
                         cwd=tmp_path, capture_output=True, check=True).stdout
    state = json.loads(out)
    assert set(state) == {"files", "tables", "schema", "indexes"}
    assert set(state["files"]) == {"data/orders.csv", "out/report.txt", ".git/HEAD"}
    git = load_ecosystem("git").spec.owns  # in a stack with git, its paths go too
    assert {".git/*", "README.md", "src/*"} <= set(git)


def test_members_that_cannot_share_a_workspace_are_refused():
    files = load_ecosystem("files")
    twin = replace(files, spec=files.spec.model_copy(update={
        "name": "twin", "tools": [], "faults": None, "scenarios": [], "describers": []}),
        samplers={})
    with pytest.raises(StackError, match="files and twin both seed"):
        compose([files, twin]).seed_state(1)
    with pytest.raises(EcosystemError, match="two or more"):
        load_ecosystem("files+")
    with pytest.raises(EcosystemError, match="two or more different"):
        load_ecosystem("files+files")
    with pytest.raises(EcosystemError, match="unknown ecosystem 'nosuch'"):
        load_ecosystem("files+nosuch")


def test_a_folder_may_not_name_itself_like_a_stack(tmp_path):
    folder = tmp_path / "eco"
    folder.mkdir()
    text = Path("tests/fixtures/ecosystems/inventory/ecosystem.yaml").read_text()
    (folder / "ecosystem.yaml").write_text(text.replace("name: inventory", "name: a+b"))
    with pytest.raises(EcosystemError, match="joins the ecosystems of a stack"):
        load_ecosystem(str(folder))


def test_a_stack_file_joins_a_user_ecosystem_and_a_builtin():
    eco = load_ecosystem(LEDGERS)
    assert eco.name == "files+inventory" and not eco.builtin
    assert [s.name for s in eco.spec.scenarios] == ["stock_report"]
    assert eco.spec.tool("ledger_csv") and eco.spec.faults is None  # no scenario lists one
    assert [p.name for p in eco.parts] == ["files", "inventory"]


@pytest.mark.parametrize("ref", ["files+git+sql", LEDGERS])
def test_every_graph_of_a_stack_with_its_own_scenarios_crosses_its_members(ref):
    eco = load_ecosystem(ref)
    candidates, _ = plan_candidates(eco, 60, 5)
    assert len({c.graph.fingerprint() for c in candidates}) == 60
    crossing = [c for c in candidates if eco.crosses({s.tool for s in c.graph.steps})]
    assert len(crossing) == 60, [s.tool for c in candidates for s in c.graph.steps
                                 if c not in crossing]


def test_the_default_mix_gives_the_stacks_their_share():
    assert default_refs() == ["files", "git", "service", "sql", "files+git+sql"]
    settings = RunSettings(tasks=200)
    owners = settings.owners()
    assert owners.count(4) == 60 and {owners.count(p) for p in range(4)} == {35}
    assert sorted(i for p in range(5) for i in settings.indices(p)) == list(range(200))
    alone = RunSettings(tasks=10, ecosystems=["files", "git"], stack_share=0.9)
    assert alone.owners() == [0, 1] * 5  # no stack named: even, as before
    assert RunSettings(tasks=10, stack_share=0).owners().count(4) == 0


@pytest.mark.parametrize("ref", default_refs())
def test_no_sampled_text_is_drawn_from_an_argument_the_solver_may_look_up(ref):
    """A typed argument may be a value the task has the solver find (the log with the most
    errors); a commit message drawn from it ("Add logs/clearly.log") gives the finding away."""
    eco = load_ecosystem(ref)
    leaks = [(t.name, p.name, w) for t in eco.spec.tools for p in t.params
             if p.sample and p.type.startswith("text.")
             for w in p.sample.with_ if t.param(w).typed]
    assert leaks == []
