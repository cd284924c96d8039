"""Discovery turns on real candidates (Docker, one run per built-in ecosystem): each comes
before the first call that uses what it reveals, and its observation is what the sandbox
really prints in the state that call starts from."""

import json
import re

import pytest

from environments.docker.config import DockerConfig
from environments.docker.images import ecosystem_image
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.trace import Trace
from tasks.execute.realize import realize
from tasks.plan.planner import plan_candidates
from tasks.rules.grounding import appears, first_ungrounded, new_names
from tasks.rules.shell_names import command_names

RUN_ID = "itest-discovery"
pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", params=["files", "sql", "git", "service"])
def accepted(request):
    name = request.param
    eco = ecosystem(name)
    config = ecosystem_image(eco, DockerConfig())
    candidates, _ = plan_candidates(eco, 4, run_seed=21)
    try:
        outcomes = [build_candidate(c, name, config, RUN_ID) for c in candidates]
        tasks = [o for o in outcomes if o.task]
        assert len(tasks) >= 3, [o.attempt.detail for o in outcomes if not o.task]
        yield eco, config, tasks
    finally:
        close_run(RUN_ID)


def _hashless(text):
    """Commits made during the task get other hashes on a rerun (their date differs)."""
    return re.sub(r"\b[0-9a-f]{12}\b", "<hash>", text)


def test_discoveries_are_real_and_come_before_the_step_that_needs_them(accepted):
    eco, config, outcomes = accepted
    for o in outcomes:
        trace = Trace.model_validate_json(o.task.trace_json)
        first_reads = eco.spec.tool(trace.steps[0].tool).effect == "read"  # a lookup
        assert trace.steps[0].discoveries or first_reads, "the first step inspects first"
        with provider_for(config, RUN_ID).sandbox() as sb:
            realize(sb, eco, o.task.seed, fault=o.task.fault)
            for st in trace.steps:
                for d in st.discoveries:  # the same command now prints the same thing
                    again = sb.exec(["bash", "-c", d.command], timeout=30)
                    assert _hashless(again.stdout) == _hashless(d.observation.stdout), \
                        (d.command, again.stdout)
                    assert d.observation.exit_code == 0, (d.command, d.observation.stderr)
                done = sb.exec(["bash", "-c", st.command], timeout=30)
                assert done.exit_code == 0, st.command
        shown = [d.observation.stdout for d in trace.steps[0].discoveries]
        first = trace.steps[0]
        tool = eco.spec.tool(first.tool)
        own = {v for n, v in first.args.items() if tool.names_new_entry(n)}  # agent's choice
        needed = [n for n in command_names(first.command)
                  if n not in o.task.instruction and n not in own]
        assert all(appears(n, shown) for n in needed), (first.command, needed)


def test_both_views_pass_the_stricter_rule(accepted):
    _, _, outcomes = accepted
    for o in outcomes:
        views = {(r.action_space, r.supervision): r for r in o.trajectories}
        function, terminal = views[("function", "full")], views[("terminal", "full")]
        values = [json.loads(c.function.arguments)
                  for m in function.messages for c in m.tool_calls or []]
        assert first_ungrounded(function.messages, json.loads(function.tools)) is None
        chosen = new_names(function.messages, json.loads(function.tools))  # as the pipeline
        assert first_ungrounded(terminal.messages, json.loads(terminal.tools), values,
                                chosen) is None
        names = [c.function.name for m in function.messages for c in m.tool_calls or []]
        assert sum(n in {d.name for d in accepted[0].spec.discovery} for n in names) >= 1
        if accepted[0].name == "service":  # the step's reasoning cites the API entry it uses
            assert any("SERVICE.md documents `" in (m.reasoning_content or "")
                       for m in terminal.messages), terminal.messages
