"""Promises are checks, on the real engine: sloppy solutions that break one promise of the
instruction score 0 with the task's own verifier — a table with the promised columns in
another order (a build task and a reconstruct task), a repaired CSV whose rows were
re-sorted, a stray ticket or user in the shared tracker, a stray branch — while a work
file of the solver's own still scores 1.  The near-miss control records 0 on each task,
and a verifier that compares a table's columns as a set is rejected as
``validate/promise_unchecked``, naming the promise."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import load_ecosystem
from environments.sandbox import Sandbox
from flows.run import candidate as candidate_module
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.graph import Candidate, TaskKind
from schemas.records import TaskRow
from schemas.trace import Trace
from tasks.execute.realize import LiveEnvironment
from tasks.gate import near_miss
from tasks.plan.planner import plan_candidates
from tasks.reconstruct.program import installer, program_script
from tasks.verify.verifier import run_verifier

pytestmark = pytest.mark.docker
RUN = f"itest-promises-{os.getpid()}"
TABLE_TOOLS = {"customer_orders", "copy_rows_above", "filter_to_table", "top_rows",
               "city_orders", "union_tables"}
SCRATCH = "printf 'my own notes\\n' > scratch-notes.txt"


def _accepted(ref: str, tools: set[str], kinds: dict[TaskKind, float] | None = None,
              fault: bool | None = None) -> tuple[Candidate, TaskRow]:
    """The first planned candidate using one of ``tools`` (and, with ``fault``, a fix task
    or not) that the factory accepts."""
    candidates, _ = plan_candidates(ecosystem(ref), 120, 21, None, kinds)
    try:
        for c in candidates:
            used = {s.tool for s in c.graph.steps}
            if (tools and not used & tools) or (fault is not None and bool(c.graph.fault) != fault):
                continue
            outcome = build_candidate(c, ref, DockerConfig(), RUN)
            if outcome.task is not None:
                return c, outcome.task
    finally:
        close_run(RUN)
    pytest.fail(f"no accepted {ref} task uses {sorted(tools)}")


@contextmanager
def solved(task: TaskRow, solution: str | None = None) -> Iterator[Sandbox]:
    """A sandbox of the task's environment after its reference solution (or ``solution``)."""
    eco = ecosystem(task.ecosystem)
    trace = Trace.model_validate_json(task.trace_json)
    config = DockerConfig().for_ecosystem(eco)
    try:
        with LiveEnvironment(eco, task.seed, lambda packages: provider_for(
                config, RUN).sandbox(), trace.environment, task.fault) as env:
            sb = env.sandbox
            done = sb.exec(["bash", "-s"], stdin=(solution or task.solution_sh).encode(),
                           env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=120)
            assert done.exit_code == 0, done.stderr
            yield sb
    finally:
        close_run(RUN)


def _score_after(task: TaskRow, command: str) -> float:
    with solved(task) as sb:
        assert run_verifier(sb, task.verifier_py).reward == 1
        done = sb.exec(["bash", "-c", command], timeout=60)
        assert done.exit_code == 0, done.stderr
        return run_verifier(sb, task.verifier_py).reward


def _created_table(task: TaskRow) -> str:
    checks = json.loads(task.checks_json)
    return next(c["key"] for c in checks if c["kind"] == "state" and c["section"] == "schema"
                and len(c["expected"]["columns"]) > 1)


@pytest.fixture(scope="module")
def sql_table_task() -> tuple[Candidate, TaskRow]:
    return _accepted("sql", TABLE_TOOLS)


def test_a_table_with_its_columns_in_another_order_scores_0(sql_table_task):
    _, task = sql_table_task
    table = _created_table(task)
    reorder = ecosystem("sql").shortcut_hooks.near_misses(  # type: ignore[union-attr]
        table, {"schema": {"columns": ["a", "b"]}})[0][2]
    assert _score_after(task, reorder) == 0.0
    assert _score_after(task, SCRATCH) == 1.0  # a work file of one's own is fine
    assert task.gate.near_miss_reward == 0.0


def test_a_reconstruct_program_that_reorders_the_columns_scores_0():
    """The reference program, then every table it made in its workspace given its columns
    in reverse order: every hidden case fails."""
    _, task = _accepted("sql", TABLE_TOOLS, kinds={"reconstruct": 1.0})
    eco = ecosystem("sql")
    program = program_script(Trace.model_validate_json(task.trace_json), eco.spec.answer_file)
    reorder = eco.shortcut_hooks.near_misses(  # type: ignore[union-attr]
        "TF_TABLE_KEY", {"schema": {"columns": ["a", "b"]}})[0][2].replace(
            "TF_TABLE_KEY", '"$t"')
    made = ("for t in $(sqlite3 shop.db \"SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT IN ('customers', 'products', 'orders', 'order_items')\"); do "
            f"{reorder}; done")
    with solved(task, installer(program.rstrip() + "\n" + made)) as sb:
        assert run_verifier(sb, task.verifier_py).reward == 0.0
    with solved(task) as sb:
        assert run_verifier(sb, task.verifier_py).reward == 1.0
    assert task.gate.near_miss_reward == 0.0


def test_a_repaired_csv_with_its_rows_resorted_scores_0():
    _, task = _accepted("files", {"dedupe_rows", "drop_short_rows", "strip_bom"}, fault=True)
    checks = json.loads(task.checks_json)
    path = next(c["key"] for c in checks if c["kind"] == "state" and c["compare"] == "csv")
    resort = (f"(head -n 1 {shlex.quote(path)}; tail -n +2 {shlex.quote(path)} | sort -r) "
              f"> /tmp/resorted && cat /tmp/resorted > {shlex.quote(path)}")
    assert _score_after(task, resort) == 0.0
    assert _score_after(task, SCRATCH) == 1.0


@pytest.fixture(scope="module")
def service_task() -> tuple[Candidate, TaskRow]:
    return _accepted("service", set(), fault=False)


@pytest.mark.parametrize("section", ["tickets", "users"])
def test_a_stray_record_in_the_shared_tracker_scores_0(service_task, section):
    _, task = service_task
    extra = ecosystem("service").spec.probe_sections[section].extra[0]
    assert _score_after(task, extra) == 0.0


def test_a_work_file_in_the_tracker_task_is_the_solvers_own(service_task):
    _, task = service_task
    assert _score_after(task, SCRATCH) == 1.0
    assert "Create no other tickets, comments, users or teams than those asked for." in \
        task.instruction


def test_a_stray_branch_scores_0_and_the_instruction_says_so():
    _, task = _accepted("git", set(), fault=False)
    assert _score_after(task, "git branch my-scratch-branch") == 0.0
    assert _score_after(task, SCRATCH) == 1.0
    assert "Create no other branches or tags than those asked for." in task.instruction


def test_a_verifier_comparing_columns_as_a_set_is_rejected_as_promise_unchecked(
        sql_table_task, monkeypatch):
    """The probe made to list a table's columns sorted (a set): the near-miss control
    finds the column order unchecked and names it."""
    candidate, _ = sql_table_task
    eco = ecosystem("sql")
    lax = eco.probe_source.replace('"columns": columns}', '"columns": sorted(columns)}')
    assert lax != eco.probe_source
    monkeypatch.setattr(candidate_module, "ecosystem",
                        lambda ref: dataclasses.replace(load_ecosystem(ref), probe_source=lax))
    a = build_candidate(candidate, "sql", DockerConfig(), RUN).attempt
    close_run(RUN)
    assert (a.status, a.stage, a.reason) == ("rejected", "validate", "promise_unchecked"), \
        a.detail
    assert "does not check the column order of" in a.detail


def test_each_near_miss_names_the_check_that_must_catch_it(sql_table_task):
    _, task = sql_table_task
    from schemas.verifier import Check
    checks = [Check.model_validate(c) for c in json.loads(task.checks_json)]
    misses = near_miss.near_misses(ecosystem("sql"), checks)
    names = {m.check for m in misses}
    assert {"tables/tables", "schema/schema", "indexes/indexes"} <= names
    assert f"schema/{_created_table(task)}" in names
