"""Trajectories from real executions (local sandboxes): views, masks, replay, rejections."""

import json
import shutil
from collections import defaultdict

import pytest

from environments.local.config import LocalConfig
from flows.run import candidate as candidate_module
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.trace import Trace
from tasks.core.commands import render_command, render_shell
from tasks.execute.realize import realize
from tasks.plan.planner import plan_candidates
from tasks.rules.grounding import first_ungrounded, new_names
from tasks.trajectories import render as trajectories_module
from tasks.verify.verifier import run_verifier

RUN_ID = "itest-trajectories"
ECOSYSTEMS = ["files", "sql", "git"]
BACKEND = LocalConfig()


@pytest.fixture(scope="module")
def accepted():
    """(ecosystem name, outcome) for the accepted candidates of three ecosystems."""
    out = []
    for name in ECOSYSTEMS:
        candidates, _ = plan_candidates(ecosystem(name), 8, run_seed=5)
        outcomes = [build_candidate(c, name, BACKEND, RUN_ID) for c in candidates]
        out += [(name, o) for o in outcomes if o.task]
        assert sum(o.task is not None for o in outcomes) >= 6, [
            o.attempt.detail for o in outcomes if not o.task]
    yield out
    close_run(RUN_ID)


def _views(outcome):
    views = defaultdict(dict)
    for row in outcome.trajectories:
        views[row.action_space][row.supervision] = row
    return views


def test_six_rows_with_the_masks_of_each_mode_message_by_message(accepted):
    ids = set()
    for _, o in accepted:
        assert len(o.trajectories) == 6
        ids |= {r.trajectory_id for r in o.trajectories}
        for space, modes in _views(o).items():
            full = modes["full"].messages
            for mode, row in modes.items():
                assert row.reward == 1.0 and row.n_turns == sum(
                    m.role == "assistant" for m in row.messages)
                assert len(row.messages) == len(full)
                for m, f in zip(row.messages, full, strict=True):
                    trained = m.role == "assistant" or (mode == "actobs" and m.role == "tool")
                    assert (m.train, m.weight) == (trained, int(trained)), (space, mode, m)
                    assert (m.role, m.content, m.tool_calls) == (f.role, f.content, f.tool_calls)
                    if m.role == "assistant":
                        assert (m.reasoning_content is None) == (mode == "masked")
                        assert mode == "masked" or m.reasoning_content
                    else:
                        assert m.reasoning_content is None
    assert len(ids) == 6 * len(accepted)


def test_both_views_show_the_same_observations_and_the_exact_commands(accepted):
    for name, o in accepted:
        eco = ecosystem(name)
        trace = Trace.model_validate_json(o.task.trace_json)
        views = _views(o)
        function, terminal = views["function"]["full"], views["terminal"]["full"]
        assert [m.content for m in function.messages if m.role == "tool"] == \
            [m.content for m in terminal.messages if m.role == "tool"]
        assert [t["function"]["name"] for t in json.loads(terminal.tools)] == ["bash"]
        commands = [json.loads(c.function.arguments)["command"]
                    for m in terminal.messages for c in m.tool_calls or []]
        ran = [command for st in trace.steps
               for command in [*(d.command for d in st.discoveries), st.command]]
        assert commands[:len(ran)] == ran
        calls = [c.function for m in function.messages for c in m.tool_calls or []]
        for command, fn in zip(ran, calls, strict=False):
            args = {k: str(v) for k, v in json.loads(fn.arguments).items()}
            assert _rendered(eco, fn.name, args) == command
        assert first_ungrounded(function.messages, json.loads(function.tools)) is None
        values = [json.loads(fn.arguments) for fn in calls]
        chosen = new_names(function.messages, json.loads(function.tools))
        assert first_ungrounded(terminal.messages, json.loads(terminal.tools), values,
                                chosen) is None


def _rendered(eco, name, args):
    """The command a function-view call stands for (a tool's or a discovery's)."""
    if name in {d.name for d in [*eco.spec.discovery, *eco.spec.describers]}:
        return render_shell(eco.spec.discovery_tool(name).command, args)
    return render_command(eco.spec.tool(name), args)


@pytest.mark.docker
def test_service_views_are_grounded_and_replay_in_a_container():
    from environments.docker.config import DockerConfig
    from environments.docker.images import ecosystem_image

    eco = ecosystem("service")
    config = ecosystem_image(eco, DockerConfig())
    candidates, _ = plan_candidates(eco, 6, run_seed=13)
    try:
        outcomes = [build_candidate(c, "service", DockerConfig(), RUN_ID) for c in candidates]
        accepted = [o for o in outcomes if o.task]
        assert len(accepted) >= 4, [o.attempt.detail for o in outcomes if not o.task]
        for o in accepted:
            terminal, function = _views(o)["terminal"]["masked"], _views(o)["function"]["masked"]
            values = [json.loads(c.function.arguments)
                      for m in function.messages for c in m.tool_calls or []]
            chosen = new_names(function.messages, json.loads(function.tools))
            assert first_ungrounded(terminal.messages, json.loads(terminal.tools), values,
                                    chosen) is None
            with provider_for(config, RUN_ID).sandbox() as sb:
                realize(sb, eco, o.task.seed, fault=o.task.fault)
                _replay(sb, [json.loads(c.function.arguments)["command"]
                             for m in terminal.messages for c in m.tool_calls or []])
                assert run_verifier(sb, o.task.verifier_py).reward == 1, o.task.instruction
    finally:
        close_run(RUN_ID)


def _replay(sandbox, commands):
    for command in commands:
        done = sandbox.exec(["bash", "-c", command], timeout=30)
        assert done.exit_code == 0, (command, done.stderr)


def test_replaying_either_view_in_a_fresh_sandbox_solves_the_task(accepted):
    for name, o in accepted:
        eco = ecosystem(name)
        views = _views(o)
        with provider_for(BACKEND, RUN_ID).sandbox() as sb:
            _, initial = realize(sb, eco, o.task.seed, fault=o.task.fault)
            terminal = [json.loads(c.function.arguments)["command"]
                        for m in views["terminal"]["masked"].messages for c in m.tool_calls or []]
            _replay(sb, terminal)
            assert run_verifier(sb, o.task.verifier_py).reward == 1, o.task.instruction
            sb.restore(initial)
            assert run_verifier(sb, o.task.verifier_py).reward == 0
            for m in views["function"]["masked"].messages:
                for c in m.tool_calls or []:
                    args = {k: str(v) for k, v in json.loads(c.function.arguments).items()}
                    if c.function.name == "write_answer":
                        sb.write_files({eco.spec.answer_file: (args["value"] + "\n").encode()})
                    else:
                        _replay(sb, [_rendered(eco, c.function.name, args)])
            assert run_verifier(sb, o.task.verifier_py).reward == 1, o.task.instruction


def test_an_answer_hidden_by_truncation_is_rejected_as_ungrounded(accepted, monkeypatch):
    name, o = next((n, o) for n, o in accepted if o.task.answer and len(o.task.answer) > 1)
    monkeypatch.setattr(trajectories_module, "OBSERVATION_CAP", 1)
    candidates, _ = plan_candidates(ecosystem(name), 8, run_seed=5)
    again = build_candidate(next(c for c in candidates if c.candidate_id == o.task.candidate_id),
                            name, BACKEND, RUN_ID)
    assert again.task is None and again.trajectories == []
    assert (again.attempt.stage, again.attempt.reason) == ("trajectories", "ungrounded")
    detail = again.attempt.detail  # the first message that uses a value nothing showed:
    assert ("argument" in detail and "earlier observation" in detail  # a call, or
            or "the reasoning quotes" in detail and "which nothing showed" in detail), detail


def test_an_intent_that_drops_a_sampled_value_is_rejected_as_not_preserved(tmp_path):
    eco_dir = tmp_path / "inventory"
    shutil.copytree("tests/fixtures/ecosystems/inventory", eco_dir)
    spec = eco_dir / "ecosystem.yaml"
    text = spec.read_text()
    assert "intent: the quantity of SKU {{ sku }} in {{ ledger }}" in text
    spec.write_text(text.replace("intent: the quantity of SKU {{ sku }} in {{ ledger }}",
                                 "intent: the quantity of the SKU in {{ ledger }}"))
    eco = candidate_module.ecosystem(str(eco_dir))
    candidates, _ = plan_candidates(eco, 30, run_seed=2)
    outcomes = [build_candidate(c, str(eco_dir), BACKEND, RUN_ID) for c in candidates]
    rejected = [o.attempt for o in outcomes if o.attempt.reason == "not_preserved"]
    assert rejected, "no candidate ended with quantity_of"
    for attempt in rejected:
        assert attempt.stage == "instruct" and attempt.task_id is None
        assert "lacks `SKU-" in attempt.detail, attempt.detail
    for o in outcomes:
        if o.task:
            assert all(f"`{lit}`" in o.task.instruction for lit in o.task.instruction_literals)
            assert o.task.tools[-1] != "quantity_of", o.task.instruction
