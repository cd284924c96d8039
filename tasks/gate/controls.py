"""The controls: what the gate and ``check-harbor`` try on a task, one list for both.

A control starts from the task's initial state, does something — nothing, the reference
solution, a shortcut, part of the solution — and scores the result with the task's
verifier.  The reference must pass (and its ``solve.sh`` exit 0); every other control
must fail (reward 0).  A task is sound only when every control scores so.  A *measured*
control expects nothing: its reward is recorded on the task, never a rejection.

Controls run on a :class:`Host`: the gate's sandbox, restored to the initial state's
snapshot for each control (:mod:`tasks.gate.gate`), or a fresh container of an exported
Harbor image for each one (:mod:`tasks.exports.harbor.host`).  Checks that only one side can make
stay with it: the gate's realization and determinism replay, Harbor's identity of the
rebuilt environment.

:data:`CONTROLS`, in the order they run:

- ``nop``: nothing is done (on a reconstruct task: no program);
- ``reference``: the reference solution (on a reconstruct task: it installs the
  reference program);
- ``empty``: every expected output created empty (:mod:`tasks.gate.shortcuts`);
- ``partial``: the reference minus its last mutating step (only when it has one); on a
  reconstruct task, the reference program minus that step, or minus its last step when
  it has no mutating one (its answer then goes unwritten);
- ``literals``: every output holding the instruction's literals, the answer tried as each;
- ``memorizer``: a reconstruct task's program that copies the first public example's
  expected output, whatever its input (:func:`tasks.reconstruct.program.memorizer_program`);
- ``hardcoded``: a reconstruct task's reference program with each choice (a step that
  singles out one entry by a rule: the CSV file with the most lines) replaced by printing
  the entry it found in the first public example (:mod:`tasks.reconstruct.choices`; only where the
  program makes a choice);
- ``unrepaired``: a fix task's reference minus its repair steps (only when other writes
  follow them): a later step must not make the repair moot;
- ``vandal``: the reference solution, then one change to a seeded entry the task leaves
  alone in each probe section that declares how to make one (:mod:`tasks.gate.vandal`), all
  at once: each section's ``unchanged`` check must fail;
- ``near_miss``: the reference solution, then changes that each break one promise of the
  instruction (an extra entry in a shared section, rows or columns in another order, the
  answer in a near format; :mod:`tasks.gate.near_miss`), all at once: the check of each must
  fail (``validate/promise_unchecked`` names those that do not);
- ``alternative``: the reference solution with each step's command replaced by one of its
  tool's ``alternatives`` (:mod:`tasks.gate.alternative`; only where a tool declares some) must
  pass as the reference does;
- ``hostile``: an agent that never attempts the task and attacks the verifier instead
  (:mod:`tasks.gate.attacks`: a process left running that writes the reward, planted reward
  files and Python modules, configuration that makes a probe run its program, a program
  that peeks at the hidden cases, ...) must score 0.  It runs where the verifier runs
  apart from the agent (:attr:`ControlTask.apart`: a second user, as Harbor's runner
  has), after every other control, since what it plants outside the workspace stays in
  the sandbox; when it scores, each attack runs alone to name the one that took the
  reward;
- ``open_loop`` (measured): the reference solution with every argument the instruction
  does not write replaced by a wrong value (:mod:`tasks.gate.open_loop`).  It applies only when
  the task carries that script and the script differs from the reference: the gate draws
  it from the seeded state; ``check-harbor`` does not run it (a measurement, not a
  soundness condition, already recorded on the task; and an exported image's host has no
  probe state to draw the wrong values from).

``empty``, ``literals``, ``vandal`` and ``alternative`` act on the workspace a build or fix
task changes, so they do not apply to a reconstruct task, whose workspace holds examples.

A new control is one entry in :data:`CONTROLS`: what it does from the initial state (with
the host's four verbs), what it expects, and the rejection it causes in the gate.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from environments.ecosystems import Ecosystem
from schemas.trace import StepTrace, Trace
from schemas.verifier import Check
from tasks.core.commands import shell_script, solution_failure, solution_script
from tasks.core.failures import Reason, StageFailure
from tasks.gate.alternative import AlternativeSolution, alternative_solution, explain
from tasks.gate.attacks import attack_script, attacks_for
from tasks.gate.near_miss import NearMiss, near_misses
from tasks.gate.shortcuts import Shortcut, shortcut
from tasks.gate.vandal import vandal_script, vandalisms
from tasks.reconstruct.choices import choice_steps, hardcoded_trace
from tasks.reconstruct.program import installer, memorizer_program, program_script


@dataclass(frozen=True)
class Score:
    """What the verifier said: reward 1 or 0, checks passed of checks total; with several
    answers tried, the best trial and how many were tried."""

    reward: float
    checks_passed: int | None = None
    checks_total: int | None = None
    trials: int = 0
    failed: tuple[str, ...] = ()
    """The failing checks, ``section/key`` (or the answer file)."""


@dataclass(frozen=True)
class Solved:
    """A solution's run: its exit code and its stderr (the tail of it)."""

    exit_code: int
    stderr: str = ""


class Host(Protocol):
    """Where controls run: one task's environment, in the gate or in Harbor's container."""

    def start(self) -> AbstractContextManager[object]:
        """The task's initial state, fresh for one control (left when the control ends)."""

    def solve(self, script: str | None = None) -> Solved:
        """Run ``script`` (None: the task's reference solution) as the agent would, in the
        workdir."""

    def solved(self) -> Solved:
        """The state the reference solution leaves, from the initial state: the reference
        run again, or a copy of what its own control left (the outcome is then that run's)."""

    def apply(self, fake: Shortcut) -> None:
        """Write the shortcut's files and run its commands as the agent."""

    def score(self, answers: list[str] | None = None) -> Score:
        """Run the verifier on the current state; with ``answers``, each text in turn as
        the answer file, the best trial counting."""


@dataclass(frozen=True)
class ControlTask:
    """What controls read of a task."""

    eco: Ecosystem
    trace: Trace
    checks: list[Check]
    instruction: str
    open_loop: str | None = None
    """The open-loop ``solve.sh`` when it differs from the reference (the gate's only)."""
    public_case: str | None = None
    """A reconstruct task's first public example (the memorizer copies its expected
    output); None on other kinds."""
    apart: bool = True
    """The verifier runs apart from the agent: as another user that stops the agent's
    processes and owns the reward (False on a backend with one user)."""

    @property
    def reconstruct(self) -> bool:
        return self.public_case is not None

    def script(self, steps: list) -> str:
        """The ``solve.sh`` of the reference cut to ``steps``: the commands themselves, or
        on a reconstruct task the installer of the program made of them."""
        answer = self.eco.spec.answer_file
        if self.reconstruct:
            return installer(program_script(self.trace, answer, steps))
        return solution_script(self.trace, answer, steps)


@dataclass(frozen=True)
class Acted:
    """What a control did: the solution it ran, the answers the verifier must try."""

    solved: Solved | None = None
    answers: list[str] | None = None
    what: str = ""
    """What the control did, when it is not the same for every task (a rejection names it)."""
    targets: tuple[tuple[str, str], ...] = ()
    """(what was broken, the check that must catch it) for each change of a control that
    makes several at once: every one of those checks must fail, not just one."""


@dataclass(frozen=True)
class Control:
    """One control: its name, what it does, what it expects, the gate's rejection."""

    name: str
    act: Callable[[Host, ControlTask], Acted]
    expect: Literal["pass", "fail", "measured"]
    reason: Reason | None = None
    """The gate's rejection reason when the control does not score as expected."""
    failure: str = ""
    """The rejection's detail, formatted with ``passed``, ``total``, ``solve_exit``,
    ``solved`` (``exit 0``, or where the solution failed: :func:`solution_failure`),
    ``what`` (:attr:`Acted.what`) and ``why`` (``explain``'s text)."""
    applies: Callable[[ControlTask], bool] = lambda task: True
    explain: Callable[[ControlTask, Score], str] | None = None
    """What a score that is not as expected means for the task (``why`` in ``failure``)."""
    blame: Callable[[Host, ControlTask], str] | None = None
    """When the control does not score as expected: what did it, found by running more
    on the host (``why`` in ``failure``)."""

    def holds(self, reward: float, solve_exit: int | None) -> bool:
        """Did the control score as expected?  A measured control always does."""
        if self.expect == "measured":
            return True
        if self.expect == "pass":
            return reward == 1 and solve_exit in (None, 0)
        return reward == 0


@dataclass(frozen=True)
class Trial:
    """One control run on one host."""

    control: Control
    score: Score
    solved: Solved | None = None
    what: str = ""
    why: str = ""
    targets: tuple[tuple[str, str], ...] = ()

    @property
    def solve_exit(self) -> int | None:
        return None if self.solved is None else self.solved.exit_code

    @property
    def solve_outcome(self) -> str:
        """``exit 0`` (or nothing run), else where the solution failed (its line, command,
        exit code and last stderr line: :func:`tasks.core.commands.solution_failure`)."""
        solved = self.solved
        return ("exit 0" if solved is None or solved.exit_code == 0
                else solution_failure(solved.exit_code, solved.stderr))

    @property
    def missed(self) -> list[str]:
        """What the control broke that no failing check caught (a reconstruct verifier
        names a check with its case: ``case-c:files/out.csv``)."""
        failed = {name.split(":", 1)[1] if ":" in name.split("/", 1)[0] else name
                  for name in self.score.failed}
        return [what for what, check in self.targets if check not in failed]

    @property
    def ok(self) -> bool:
        return self.control.holds(self.score.reward, self.solve_exit) and not self.missed

    def failure(self) -> StageFailure:
        """The gate's rejection for a control that did not score as expected."""
        detail = self.control.failure.format(passed=self.score.checks_passed,
                                             total=self.score.checks_total,
                                             solve_exit=self.solve_exit,
                                             solved=self.solve_outcome, what=self.what,
                                             why=self.why)
        assert self.control.reason is not None, f"{self.control.name} is measured"
        return StageFailure("validate", self.control.reason, detail)


def _writes(task: ControlTask) -> list:
    return [s for s in task.trace.steps if task.eco.spec.tool(s.tool).effect == "write"]


def _nothing(host: Host, task: ControlTask) -> Acted:
    return Acted()


def _reference(host: Host, task: ControlTask) -> Acted:
    return Acted(solved=host.solve())


def _dropped(task: ControlTask) -> StepTrace:
    """The step the partial control leaves out: the last mutating one, else (a reconstruct
    program that only reads) the last one."""
    return (_writes(task) or task.trace.steps)[-1]


def _partial(host: Host, task: ControlTask) -> Acted:
    last = _dropped(task)
    which = "last mutating step" if _writes(task) else "last step (a program that only reads)"
    return Acted(solved=host.solve(task.script([s for s in task.trace.steps
                                                if s is not last])),
                 what=f"its {which}, {last.step_id} {last.tool}")


def _repairs(task: ControlTask) -> list:
    return [s for s in task.trace.steps if task.eco.spec.tool(s.tool).repair]


def _unrepaired(host: Host, task: ControlTask) -> Acted:
    return Acted(solved=host.solve(task.script([s for s in task.trace.steps
                                                if s not in _repairs(task)])))


def _vandal(host: Host, task: ControlTask) -> Acted:
    changes = vandalisms(task.eco, task.checks)
    assert changes, "the vandal control applies only with a change to make"
    host.solved()
    return Acted(solved=host.solve(vandal_script(changes)),
                 what="; ".join(map(str, changes)),
                 targets=tuple((f"{c.section} ({c})", c.check) for c in changes))


def _near_misses(task: ControlTask) -> list[NearMiss]:
    return near_misses(task.eco, task.checks, static=task.reconstruct)


def _near_miss(host: Host, task: ControlTask) -> Acted:
    misses = _near_misses(task)
    commands = [m.command for m in misses]
    if task.reconstruct:
        program = program_script(task.trace, task.eco.spec.answer_file)
        solved = host.solve(installer(program.rstrip() + "\n" + "\n".join(commands)))
    else:
        host.solved()
        solved = host.solve(shell_script("Near-miss control: the reference, then changes "
                                         "that each break one promise.", commands))
    return Acted(solved=solved, what="; ".join(map(str, misses)),
                 targets=tuple((m.promise, m.check) for m in misses))


def _alternative_solution(task: ControlTask) -> AlternativeSolution | None:
    return alternative_solution(task.eco, task.trace, task.eco.spec.answer_file)


def _alternative(host: Host, task: ControlTask) -> Acted:
    solution = _alternative_solution(task)
    assert solution is not None, "the alternative control applies only with alternatives"
    return Acted(solved=host.solve(solution.script), what=str(solution))


def _hardcoded(host: Host, task: ControlTask) -> Acted:
    chosen = ", ".join(f"{st.step_id} {st.tool} (`{st.output}`)"
                       for st in choice_steps(task.eco, task.trace))
    program = program_script(hardcoded_trace(task.eco, task.trace), task.eco.spec.answer_file)
    return Acted(solved=host.solve(installer(program)), what=chosen)


def _memorizer(host: Host, task: ControlTask) -> Acted:
    assert task.public_case is not None, "the memorizer applies only to reconstruct tasks"
    return Acted(solved=host.solve(installer(memorizer_program(task.public_case))))


def _builds(task: ControlTask) -> bool:
    return not task.reconstruct


def _open_loop(host: Host, task: ControlTask) -> Acted:
    return Acted(solved=host.solve(task.open_loop))


def _hostile(host: Host, task: ControlTask) -> Acted:
    chosen = attacks_for(task)
    return Acted(solved=host.solve(attack_script(task, chosen)),
                 what=", ".join(a.name for a in chosen))


def _blame_attack(host: Host, task: ControlTask) -> str:
    """The attacks that score alone (each from the initial state), or that only their
    combination does."""
    taken = []
    for attack in attacks_for(task):
        with host.start():
            host.solve(attack_script(task, [attack]))
            if host.score().reward > 0:
                taken.append(attack.name)
    return ", ".join(taken) or "only their combination"


def _faked(kind: str) -> Callable[[Host, ControlTask], Acted]:
    def act(host: Host, task: ControlTask) -> Acted:
        fake = shortcut(task.eco, task.checks, kind, task.instruction)
        host.apply(fake)
        return Acted(answers=fake.answers)
    return act


PASSES = "the verifier passes {} ({{passed}}/{{total}} checks)"

CONTROLS: tuple[Control, ...] = (
    Control("nop", _nothing, "fail", "baseline_passed",
            "verifier passes on the untouched environment ({passed}/{total} checks)"),
    Control("reference", _reference, "pass", "reference_failed",
            "reference solution {solved}, verifier {passed}/{total} checks"),
    Control("empty", _faked("empty"), "fail", "empty_outputs_passed",
            PASSES.format("with every output created empty"), applies=_builds),
    Control("partial", _partial, "fail", "partial_solution_passed",
            PASSES.format("after the reference solution minus {what}"),
            applies=lambda task: bool(_writes(task)) or task.reconstruct),
    Control("literals", _faked("literals"), "fail", "literals_passed",
            PASSES.format("with the outputs holding the instruction's literals"),
            applies=_builds),
    Control("memorizer", _memorizer, "fail", "memorizer_passed",
            PASSES.format("with a program that copies the first public example's expected "
                          "output"), applies=lambda task: task.reconstruct),
    Control("hardcoded", _hardcoded, "fail", "hardcoded_passed",
            PASSES.format("with the reference program printing the first public example's "
                          "entry instead of making each choice: {what}"),
            applies=lambda task: task.reconstruct and bool(choice_steps(task.eco,
                                                                        task.trace))),
    Control("unrepaired", _unrepaired, "fail", "repair_moot",
            PASSES.format("after the reference solution without its repair steps"),
            applies=lambda task: bool(_repairs(task)) and len(_writes(task)) > len(
                [s for s in _repairs(task) if task.eco.spec.tool(s.tool).effect == "write"])),
    Control("vandal", _vandal, "fail", "vandal_passed",
            "after the reference solution and {what}, which ran with {solved}, the verifier "
            "({passed}/{total} checks) does not catch the change of {why}",
            applies=lambda task: _builds(task) and bool(vandalisms(task.eco, task.checks))),
    Control("near_miss", _near_miss, "fail", "promise_unchecked",
            "after the reference solution, then changes that each break one promise "
            "({what}), which ran with {solved}, the verifier ({passed}/{total} checks) does "
            "not check {why}", applies=lambda task: bool(_near_misses(task))),
    Control("alternative", _alternative, "pass", "overspecified",
            "the solution with the alternative commands of {what} {solved}, verifier "
            "{passed}/{total} checks; failing: {why}",
            applies=lambda task: _builds(task) and _alternative_solution(task) is not None,
            explain=lambda task, score: explain(task.eco, task.trace, score.failed)),
    Control("open_loop", _open_loop, "measured",
            applies=lambda task: task.open_loop is not None),
    Control("hostile", _hostile, "fail", "hackable",
            "the verifier gives reward 1 ({passed}/{total} checks) to an agent that only "
            "attacks it; taken by: {why}",
            applies=lambda task: task.apart and bool(attacks_for(task)), blame=_blame_attack),
)
"""Every control, in the order the gate and ``check-harbor`` run them."""


def controls_for(task: ControlTask) -> list[Control]:
    """The controls that apply to ``task``, in order."""
    return [c for c in CONTROLS if c.applies(task)]


def control_named(name: str) -> Control:
    return next(c for c in CONTROLS if c.name == name)


def run_control(host: Host, control: Control, task: ControlTask) -> Trial:
    """``control`` on ``host``, from the initial state."""
    with host.start():
        acted = control.act(host, task)
        score = host.score(acted.answers)
    trial = Trial(control, score, acted.solved, acted.what, targets=acted.targets)
    if not trial.ok:
        why = (control.explain(task, score) if control.explain is not None
               else control.blame(host, task) if control.blame is not None
               else ", ".join(trial.missed) or "any of them")
        trial = Trial(control, score, acted.solved, acted.what, why, acted.targets)
    return trial
