"""The validation gate: the controls of :mod:`tasks.gate.controls`, run in the candidate's
sandbox, each from the snapshot of the initial state (the seed plus the trace's
environment additions), plus two checks only the gate makes:

- realization — in a freshly realized sandbox (``realized`` given), its state equals the
  one the trace started from;
- determinism — before the reference control, the trace's commands run once more from
  the initial state, each reproducing its observation (normalized), and end in the traced
  final state.

The factory gates an unrepaired trace in its execution sandbox (a fresh working state
without a fresh container) and a repaired one in a fresh sandbox.  ``check-harbor`` runs
the same controls in exported Harbor images (:mod:`tasks.exports.harbor.check`).

The first check or control that fails raises :class:`StageFailure` naming it.  The
measured ``open_loop`` control runs last; when the instruction writes every argument its
script is the reference's, which is not run twice: its reward is the reference's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from environments.sandbox import Initial, Sandbox, Snapshot
from schemas.trace import Trace
from schemas.verifier import Check, GateResult
from tasks.core.failures import StageFailure
from tasks.execute.realize import LiveEnvironment, first_difference, probe, state_without
from tasks.execute.steps import replay
from tasks.gate.controls import Control, ControlTask, Score, Solved, controls_for, run_control
from tasks.gate.open_loop import open_loop_script
from tasks.gate.shortcuts import Shortcut
from tasks.reconstruct.cases import Case, reconstruct_verifier_timeout
from tasks.reconstruct.examples import example_files, hidden_leaks, write_examples
from tasks.verify.verifier import VERIFIER_TIMEOUT_S, run_verifier

TIMING = logging.getLogger("tasks.gate.timing")
"""One DEBUG record per control run (and per determinism replay), its ``control`` name and
``ms`` as attributes, and one per call of a host's verb inside them, its ``verb``
(``restore``, ``solve``, ``apply``, ``verify``) and ``ms``: where the gate's time goes
(``benchmarks/throughput.py`` reads them)."""
SOLUTION_TIMEOUT_S = 120.0
REPLAY_BEFORE = "reference"
"""The determinism replay runs before this control (after the untouched state scored)."""


def _same_state(eco: Ecosystem, got: dict, want: dict, what: str,
                trace: Trace | None = None) -> None:
    answer = eco.spec.answer_file
    where = first_difference(state_without(got, answer), state_without(want, answer))
    if where is None:
        return
    writer = ""
    for st in trace.steps if trace else []:
        target = eco.spec.tool(st.tool).returns.from_param
        if target and where.split("/", 1)[1] == st.args.get(target):
            writer = f" (written by {st.step_id} {st.tool})"
    raise StageFailure("validate", "nondeterministic", f"{what} at {where}{writer}")


def run_solution(sandbox: Sandbox, script: str) -> Solved:
    """Run a ``solve.sh`` text in the sandbox's workdir, as the gate does."""
    done = sandbox.exec(["bash", "-s"], stdin=script.encode(), timeout=SOLUTION_TIMEOUT_S,
                        env={"TASKFACTORY_WORKDIR": sandbox.workdir})
    return Solved(done.exit_code, done.stderr[-4000:])


@dataclass(frozen=True)
class Workspace:
    """A sandbox whose workspace was laid out (and snapshotted) for the controls."""

    sandbox: Sandbox
    initial: Snapshot


class SandboxHost:
    """The gate's control host (:class:`tasks.gate.controls.Host`): the candidate's sandbox,
    restored to the initial state's snapshot for each control."""

    def __init__(self, env: Initial, solution_sh: str, verifier_py: str,
                 verifier_timeout: float = VERIFIER_TIMEOUT_S) -> None:
        self.env, self.solution_sh, self.verifier_py = env, solution_sh, verifier_py
        self.verifier_timeout = verifier_timeout
        self._solved: tuple[Snapshot, Solved] | None = None

    @contextmanager
    def start(self) -> Iterator[Sandbox]:
        with _timed("restore", "verb"):
            self.env.sandbox.restore(self.env.initial)
        yield self.env.sandbox

    def solve(self, script: str | None = None) -> Solved:
        with _timed("solve", "verb"):
            solved = run_solution(self.env.sandbox,
                                  self.solution_sh if script is None else script)
        if script is None and self._solved is None:
            self._solved = (self.env.sandbox.snapshot(), solved)
        return solved

    def solved(self) -> Solved:
        """The reference's end state restored from the snapshot its first run left (the
        workdir is the whole state a probe reads), else the reference run."""
        if self._solved is None:
            return self.solve()
        snapshot, solved = self._solved
        with _timed("restore", "verb"):
            self.env.sandbox.restore(snapshot)
        return solved

    def apply(self, fake: Shortcut) -> None:
        sb = self.env.sandbox
        with _timed("apply", "verb"):
            if fake.files:
                sb.write_files(fake.files)
            if fake.script:
                done = sb.exec(["bash", "-c", fake.script], timeout=60)
                if done.exit_code != 0:
                    raise StageFailure("validate", "environment", "a shortcut control could "
                                       f"not be applied: {done.stderr.strip()[-200:]}")

    def score(self, answers: list[str] | None = None) -> Score:
        with _timed("verify", "verb"):
            r = run_verifier(self.env.sandbox, self.verifier_py, answers,
                             self.verifier_timeout)
        return Score(r.reward, r.checks_passed, r.checks_total, r.trials, r.failed)


@dataclass(frozen=True)
class Gated:
    """The task a gate judges: its trace and checks, its instruction, and its reference
    solution and verifier as written into the task."""

    trace: Trace
    checks: list[Check]
    instruction: str
    solution_sh: str
    verifier_py: str


def run_gate(env: LiveEnvironment, eco: Ecosystem, gated: Gated, traced_after: dict,
             realized: dict | None = None) -> GateResult:
    """Every control in ``env`` (whatever state it is in: each control restores
    ``env.initial`` first), and the determinism replay; with ``realized`` (the state the
    trace started from), ``env`` was just realized and must equal it.  The results, or
    StageFailure naming the first check or control that failed."""
    if realized is not None:
        _same_state(eco, env.before, realized, "the environment realizes differently")
    trace, instruction = gated.trace, gated.instruction
    files = {**env.files, **{p: t.encode() for p, t in env.additions.files.items()}}
    task = ControlTask(eco, trace, gated.checks, instruction, open_loop=open_loop_script(
        eco, trace, instruction, env.seed, env.before, files),
        apart=env.sandbox.agent_user is not None)
    def replayed(control: Control) -> None:
        if control.name == REPLAY_BEFORE:
            with _timed("replay"):
                replay(env.sandbox, eco, env.initial, trace.steps, stage="validate")
                _same_state(eco, probe(env.sandbox, eco), traced_after,
                            "a second execution ends elsewhere", trace)

    return gate_result(run_controls(SandboxHost(env, gated.solution_sh, gated.verifier_py),
                                    task, replayed))


def run_controls(host: SandboxHost, task: ControlTask,
                 before: Callable[[Control], None] = lambda control: None) -> dict[str, Score]:
    """Every control that applies to ``task`` on ``host``, in order (``before`` called
    ahead of each): their scores, or StageFailure naming the first that failed."""
    scores: dict[str, Score] = {}
    for control in controls_for(task):
        before(control)
        with _timed(control.name):
            trial = run_control(host, control, task)
        if not trial.ok:
            raise trial.failure()
        scores[control.name] = trial.score
    return scores


@contextmanager
def _timed(name: str, kind: str = "control") -> Iterator[None]:
    """A :data:`TIMING` record of the block's time, ``name`` as its ``kind`` attribute."""
    start = time.perf_counter()
    try:
        yield
    finally:
        ms = (time.perf_counter() - start) * 1000
        TIMING.debug("%s took %.1f ms", name, ms, extra={kind: name, "ms": ms})


def run_reconstruct_gate(sandbox: Sandbox, eco: Ecosystem, gated: Gated,
                         cases: list[Case]) -> GateResult:
    """A reconstruct task's controls, in ``sandbox`` with its workspace laid out as the
    agent's (the public examples), after checking that no hidden case's content is in it
    (``hidden_leaked``)."""
    write_examples(sandbox, cases)
    leaks = hidden_leaks(example_files(cases), cases)
    if leaks:
        raise StageFailure("validate", "hidden_leaked",
                           "hidden case content in the agent's workspace: " + ", ".join(leaks))
    task = ControlTask(eco, gated.trace, gated.checks, gated.instruction,
                       public_case=next(c.name for c in cases if c.public),
                       apart=sandbox.agent_user is not None)
    host = SandboxHost(Workspace(sandbox, sandbox.snapshot()), gated.solution_sh,
                       gated.verifier_py, reconstruct_verifier_timeout(cases))
    return gate_result(run_controls(host, task))


REWARDED = ("empty", "partial", "literals", "memorizer", "hardcoded", "vandal", "alternative",
            "hostile", "near_miss")
"""Controls whose reward the gate records (None without them)."""
COUNTED = ("empty", "partial", "literals", "vandal")
"""Controls whose passed checks the gate records as well."""


def gate_result(scores: dict[str, Score]) -> GateResult:
    """The gate's record of the controls' scores (those of :data:`REWARDED` are None
    without them; without ``open_loop`` the open-loop solution was the reference)."""
    nop, ref = scores["nop"], scores["reference"]
    lits = scores.get("literals")
    got = {name: scores.get(name) for name in REWARDED}
    return GateResult.model_validate({
        "checks_total": ref.checks_total,
        "baseline_reward": nop.reward, "baseline_checks_passed": nop.checks_passed,
        "reference_reward": ref.reward, "reference_checks_passed": ref.checks_passed,
        "open_loop_reward": scores.get("open_loop", ref).reward,
        "literal_trials": lits.trials if lits else None,
        **{f"{name}_reward": s.reward if s else None for name, s in got.items()},
        **{f"{name}_checks_passed": s.checks_passed if s else None
           for name, s in got.items() if name in COUNTED}})
