"""Rollouts: one agent attempt at one task, in a fresh sandbox from the task's initial state,
scored by the task's own verifier.

The task's environment is rebuilt from its row
(:func:`tasks.exports.harbor.rebuild.fresh_environments`);
every attempt gets a new sandbox of it (a reconstruct task's: its workspace laid out as the
agent's, the public examples made afresh, as its Harbor export ships them).  After
the agent stops, whatever stopped it, the verifier scores the state it left.  An attempt
scoring 1 is then compared with the reference: the sandbox is restored to the initial
state, ``solve.sh`` runs, and every probed entry where the two final states differ and no
check looks is listed (``unchecked_changes``): a possible reward hack.  The row keeps the
whole attempt: the conversation, what the endpoint said of each turn besides it (reasoning,
usage where reported) and the verifier's line per check.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from environments.sandbox import Snapshot
from schemas.records import SOLVE_AGENT, ActionSpace, RolloutRow
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.core.llm import LLMClient
from tasks.execute.realize import LiveEnvironment, OpenSandbox, probe, state_without
from tasks.exports.harbor.rebuild import rebuilt_cases
from tasks.exports.harbor.source import ExportTask
from tasks.gate.gate import run_solution
from tasks.plan.tiers import scale_of
from tasks.reconstruct.examples import write_examples
from tasks.rollouts.actions import SandboxActions
from tasks.rollouts.agent_loop import Limits, LoopResult, run_loop
from tasks.trajectories.render import supervise
from tasks.verify.verifier import VerifierResult, run_verifier


def rollout_id(task_id: str, model: str, attempt: int) -> str:
    """A rollout's id: its identity (task, model, attempt index) hashed."""
    return hashlib.sha256(json.dumps([task_id, model, attempt]).encode()).hexdigest()[:20]


def checked_entries(checks: list[Check]) -> set[tuple[str, str]]:
    """(section, key) of every probed entry some check of the task looks at."""
    seen = set()
    for c in checks:
        if c.kind == "state":
            seen.add((c.section, c.key))
        elif c.kind == "unchanged":
            seen.update((c.section, key) for key in c.expected)
    return seen


def unchecked_changes(got: dict, reference: dict, checks: list[Check],
                      answer_file: str | None) -> list[str]:
    """``section/key`` of every entry where ``got`` and ``reference`` differ and no check
    looks (the answer file left out: an answer check reads it)."""
    checked = checked_entries(checks)
    got, reference = state_without(got, answer_file), state_without(reference, answer_file)
    out = []
    for section in sorted(set(got) | set(reference)):
        a, b = got.get(section, {}), reference.get(section, {})
        out += [f"{section}/{key}" for key in sorted(set(a) | set(b))
                if a.get(key) != b.get(key) and (section, key) not in checked]
    return out


def _score(env: LiveEnvironment, task: ExportTask) -> tuple[VerifierResult | None, str]:
    try:
        return run_verifier(env.sandbox, task.row.verifier_py), ""
    except StageFailure as exc:  # the agent left a state the verifier cannot read
        return None, exc.detail


def _agent_workspace(env: LiveEnvironment, task: ExportTask) -> Snapshot:
    """The snapshot an attempt starts from: the realized environment, or a reconstruct
    task's examples laid out in it (:func:`tasks.exports.harbor.rebuild.rebuilt_cases`)."""
    if not task.reconstruct:
        return env.initial
    write_examples(env.sandbox, rebuilt_cases(task, env.sandbox))
    return env.sandbox.snapshot()


def _hacks(env: LiveEnvironment, task: ExportTask, initial: Snapshot) -> list[str]:
    got = probe(env.sandbox, task.eco)
    env.sandbox.restore(initial)
    run_solution(env.sandbox, task.row.solution_sh)
    return unchecked_changes(got, probe(env.sandbox, task.eco), task.checks,
                             task.eco.spec.answer_file)


@dataclass(frozen=True)
class Agent:
    """The agent an attempt runs: its model's client, its action space and limits, and
    the sampling parameters sent with each request (None: the endpoint's)."""

    client: LLMClient
    action_space: ActionSpace
    limits: Limits
    params: dict | None = None


@dataclass(frozen=True)
class Attempt:
    """Which attempt this is: ``attempt`` of ``k`` at a task, in the solve run ``run_id``."""

    attempt: int
    k: int
    run_id: str


def run_attempt(open_sandbox: OpenSandbox, task: ExportTask, agent: Agent,
                which: Attempt) -> RolloutRow:
    """One attempt, scored (see the module doc); the row without provenance.  Raises only
    for the infrastructure (the engine, the sandbox), never for the model or endpoint."""
    t0 = time.perf_counter()
    row, client, action_space = task.row, agent.client, agent.action_space
    attempt = which.attempt
    with LiveEnvironment(task.eco, row.seed, open_sandbox, task.trace.environment,
                         row.fault, scale_of(row.tier)) as env:
        initial = _agent_workspace(env, task)
        actions = SandboxActions(env.sandbox, task.eco, task.trace, action_space)
        loop = run_loop(client, actions, row.instruction, action_space, agent.limits,
                        agent.params)
        score, unreadable = _score(env, task)
        reward = score.reward if score else 0.0
        hacks = _hacks(env, task, initial) if reward == 1 else []
    return RolloutRow(
        trajectory_id=rollout_id(row.task_id, client.config.model, attempt), task_id=row.task_id,
        run_id=which.run_id, messages=supervise(loop.messages, "masked"),
        tools=json.dumps(actions.tools, sort_keys=True),
        action_space=action_space, reward=reward, n_turns=loop.n_turns,
        model=client.config.model, attempt=attempt, k=which.k, ecosystem=row.ecosystem,
        kind=row.kind,
        stop_reason=_stop_reason(loop, reward), detail=loop.detail or unreadable,
        checks_passed=score.checks_passed if score else 0,
        checks_total=score.checks_total if score else len(task.checks),
        prompt_tokens=loop.prompt_tokens, completion_tokens=loop.completion_tokens,
        llm_s=round(loop.llm_s, 4), total_s=round(time.perf_counter() - t0, 4),
        unchecked_changes=hacks, created_at=datetime.now(UTC), agent=SOLVE_AGENT, turns=loop.turns,
        verifier_lines=list(score.lines) if score else [])


def _stop_reason(loop: LoopResult, reward: float) -> str:
    if loop.stop == "finished":
        return "solved" if reward == 1 else "gave_up"
    return loop.stop
