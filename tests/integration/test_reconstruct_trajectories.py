"""Reconstruct trajectories in Docker: the agent's work on the examples, really run, in
both views and every mode, grounded as the stage and as ``stats`` check it; written into
a real dataset beside build tasks, exported for SFT."""

import json
import os
import subprocess
import sys

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.graph import WorkflowGraph
from schemas.records import Message, TrajectoryRow
from schemas.trace import Trace
from tasks.core.failures import StageFailure
from tasks.dataset.query import connect
from tasks.dataset.report.instructions import instruction_stats
from tasks.plan.planner import plan_candidates
from tasks.reconstruct.cases import Case
from tasks.reconstruct.examples import example_files
from tasks.reconstruct.program import reference_program
from tasks.reconstruct.trajectories import program_in, render_reconstruct_trajectories
from tasks.rules.grounding import first_ungrounded
from tasks.trajectories.render import ACTION_SPACES, SUPERVISIONS
from tests.support.dataset import write_outcomes

pytestmark = pytest.mark.docker

RUN_ID = f"itest-reconstruct-traj-{os.getpid()}"  # unique: other checkouts share the engine
ECOSYSTEMS = ("files", "sql", "git")
CLI = [sys.executable, "-m", "flows.cli"]


@pytest.fixture(scope="module")
def outcomes():
    done = []
    for name in ECOSYSTEMS:
        for kinds, n in (({"reconstruct": 1.0}, 4), ({"build": 1.0}, 1)):
            candidates, _ = plan_candidates(ecosystem(name), n, run_seed=3, kinds=kinds)
            done += [(name, build_candidate(c, name, DockerConfig(), RUN_ID))
                     for c in candidates]
    yield done
    close_run(RUN_ID)


@pytest.fixture(scope="module")
def data(outcomes, tmp_path_factory):
    root = tmp_path_factory.mktemp("reconstruct-traj") / "data"
    write_outcomes(root, RUN_ID, [o for _, o in outcomes])
    return root


def _reconstruct(outcomes):
    found = [(name, o) for name, o in outcomes if o.task and o.task.kind == "reconstruct"]
    assert {name for name, _ in found} == set(ECOSYSTEMS), [
        (name, o.attempt.stage, o.attempt.reason, o.attempt.detail) for name, o in outcomes]
    return found


def _values(row: TrajectoryRow, function_row: TrajectoryRow) -> list[dict] | None:
    """The terminal view's values as stats takes them: from the function view."""
    from tasks.rules.grounding import checked_values

    if row.action_space == "function":
        return None
    return [checked_values(c.function.name, json.loads(c.function.arguments))
            for m in function_row.messages for c in m.tool_calls or []]


def test_every_view_and_mode_is_written_and_grounded(outcomes):
    for _, o in _reconstruct(outcomes):
        rows = o.trajectories
        assert sorted((r.action_space, r.supervision) for r in rows) == sorted(
            (s, m) for s in ACTION_SPACES for m in SUPERVISIONS)
        function = {r.supervision: r for r in rows if r.action_space == "function"}
        for r in rows:
            tools = json.loads(r.tools)
            assert first_ungrounded(r.messages, tools,
                                    _values(r, function[r.supervision])) is None
            names = {t["function"]["name"] for t in tools}
            assert names == ({"bash"} if r.action_space == "terminal"
                             else {"bash", "write_file"})
            assert r.messages[-1].role == "assistant" and r.messages[-1].content


def test_the_program_written_is_the_reference_and_passes_every_example(outcomes):
    eco_of = {}
    for name, o in _reconstruct(outcomes):
        eco_of.setdefault(name, ecosystem(name))
        task = o.task
        program = reference_program(eco_of[name], WorkflowGraph.model_validate_json(
            task.graph_json), Trace.model_validate_json(task.trace_json))
        cases = json.loads(task.cases_json)
        for r in o.trajectories:
            assert (program_in(r) or "").rstrip() == program.rstrip()
            tested = [m.content for m in r.messages if m.role == "tool"][-len(
                [c for c in cases if c["public"]]):]
            for t in tested:  # the comparison printed its line and the command exited 0
                stdout = t.split("\n[stderr]\n")[0]
                assert "same as expected" in stdout.splitlines() and "[exit code" not in t, t


def test_observations_show_the_examples_content(outcomes):
    for name, o in _reconstruct(outcomes):
        row = next(r for r in o.trajectories if r.action_space == "terminal")
        seen = "\n".join(m.content for m in row.messages if m.role == "tool")
        cases = json.loads(o.task.cases_json)
        for c in (c for c in cases if c["public"]):
            assert f"examples/{c['name']}/input/" in seen
            assert json.dumps(c["args"], ensure_ascii=False) in seen  # its args.json
        changed = [m.content for m in row.messages if m.role == "tool"
                   and ("Only in examples/" in m.content or "\n> " in m.content
                        or m.content.startswith(("<", ">")) or "differ" in m.content)]
        assert changed, f"{name}: no observation shows what an example's work changed: {seen}"


def _one_reconstruct(outcomes, name):
    return next(o for n, o in _reconstruct(outcomes) if n == name)


def test_a_program_that_misses_the_examples_is_rejected(outcomes):
    o = _one_reconstruct(outcomes, "files")
    task, eco = o.task, ecosystem("files")
    trace = Trace.model_validate_json(task.trace_json)
    cases = _cases(o)
    with (provider_for(DockerConfig().for_ecosystem(eco), RUN_ID).sandbox() as sb,
          pytest.raises(StageFailure) as failure):
        render_reconstruct_trajectories(sb, task.task_id, RUN_ID, task.instruction,
                                        trace, cases, "#!/usr/bin/env bash\ntrue\n")
    assert (failure.value.stage, failure.value.reason) == ("trajectories", "examples_differ")


def _cases(o) -> list[Case]:
    """The public cases of an outcome, as the stage had them (the examples in its rows)."""
    from tasks.reconstruct.cases import run_cases

    task, eco = o.task, ecosystem(o.task.ecosystem)
    graph = WorkflowGraph.model_validate_json(task.graph_json)
    trace = Trace.model_validate_json(task.trace_json)
    with provider_for(DockerConfig().for_ecosystem(eco), RUN_ID).sandbox() as sb:
        cases = run_cases(sb, eco, graph, trace, reference_program(eco, graph, trace),
                          task.seed)
    assert example_files(cases)
    return cases


def test_stats_agrees_with_the_stage_and_finds_a_corrupted_trajectory(data, outcomes):
    import duckdb

    con = connect(data)
    kinds = {k for (k,) in con.execute("select distinct kind from tasks").fetchall()}
    assert kinds == {"reconstruct", "build"}
    audits = instruction_stats(con).ecosystems
    assert audits and all(a.grounded == a.trajectories == 6 * a.tasks for a in audits)

    rows = con.sql("select * from trajectories").to_arrow_table().to_pylist()
    reconstruct = {t for (t,) in con.execute(
        "select task_id from tasks where kind = 'reconstruct'").fetchall()}
    victim = next(r for r in rows if r["task_id"] in reconstruct
                  and r["action_space"] == "terminal")
    messages = [Message.model_validate(m) for m in victim["messages"]]
    call = next(m for m in messages if m.tool_calls).tool_calls[0]  # type: ignore[index]
    args = json.loads(call.function.arguments)
    args["command"] = args["command"] + " examples/nowhere/seen.txt"
    call.function.arguments = json.dumps(args)
    victim["messages"] = [m.model_dump() for m in messages]
    other = duckdb.connect()
    other.register("tasks", con.sql("select * from tasks").to_arrow_table())
    other.register("attempts", con.sql("select * from attempts").to_arrow_table())
    import pyarrow as pa

    schema = con.sql("select * from trajectories").to_arrow_table().schema
    other.register("trajectories", pa.Table.from_pylist(rows, schema=schema))
    corrupted = {a.ecosystem: (a.trajectories, a.grounded)
                 for a in instruction_stats(other).ecosystems}
    eco = con.execute("select ecosystem from tasks where task_id = ?",
                      [victim["task_id"]]).fetchone()[0]  # type: ignore[index]
    assert corrupted[eco] == (6 * _tasks(audits, eco), 6 * _tasks(audits, eco) - 1)
    assert all(n == ok for e, (n, ok) in corrupted.items() if e != eco)


def _tasks(audits, eco):
    return next(a.tasks for a in audits if a.ecosystem == eco)


def test_export_sft_takes_reconstruct_trajectories(data, tmp_path):
    for space in ACTION_SPACES:
        for mode in SUPERVISIONS:
            out = tmp_path / f"{space}-{mode}.jsonl"
            proc = subprocess.run(
                [*CLI, "export", "sft", "--format", "hf", "--supervision", mode,
                 "--action-space", space, "--out", str(out), "--data", str(data)],
                capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            ids = {r["task_id"] for r in rows}
            con = connect(data)
            want = {t for (t,) in con.execute("select task_id from tasks").fetchall()}
            assert ids == want
            assert any('write_file' in json.dumps(r) or "solution/run.sh" in json.dumps(r)
                       for r in rows)
