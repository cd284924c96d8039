"""Targeted repairs of one failing step; each touches only the failing part.

A strategy gets the execution so far (:class:`Run`), the failing step and its failure,
and returns a :class:`Fix` — the step's new trace, the repair record and, when the step
itself changed, its replacement — or None.  Steps that already ran are never changed:
when the sandbox may differ from "initial state + kept steps" they are replayed and must
reproduce their recorded observations (:func:`tasks.execute.steps.replay`).

Strategies, least invasive first (:data:`ORDER` per failure category):

- :func:`provide`: realize the environment again with the missing file (from the seed
  module's ``provide``), the missing output directory, or the missing command's Debian
  package (a new image, so a new sandbox);
- :func:`rebind`: draw the step's sampled arguments again, or bind a typed input to
  another state value of a compatible type;
- :func:`substitute`: run a type-compatible tool instead (:mod:`tasks.execute.substitute`);
- :func:`ask_llm`: the optional LLM repairer's rebind or substitute proposal;
- :func:`truncate`: drop the failing step and what depends on it (the kept steps wrote
  something, so the task still ends in checkable state).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import Sandbox
from schemas.ecosystem import type_satisfies
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.trace import Repair, RepairKind, StepTrace, Trace
from tasks.core.commands import shell_argv
from tasks.core.failures import StageFailure, user_code_failure
from tasks.execute.purpose import Written, entry_digest, purposeless, written_entry
from tasks.execute.realize import LiveEnvironment, probe
from tasks.execute.repair_llm import RepairProposal, RepairRequest
from tasks.execute.steps import Known, relative, replay, run_step, same_observation
from tasks.execute.substitute import substitutes
from tasks.rules.compose import render_phrase
from tasks.rules.deliverables import flow

MAX_TRIES = 3
"""Values or tools one strategy tries before it gives up."""
ANSWER_DRAWS = 8
"""Draws of a purposeless answer's sampled arguments: an answer that shows none of the
work mostly reads the wrong field of the right entry (the status of a ticket the fix
reassigned), and a field has a handful of values."""

Repairer = Callable[[RepairRequest], RepairProposal | None]


@dataclass
class Run:
    """One graph's execution so far, shared by the execution loop and the strategies."""

    env: LiveEnvironment
    eco: Ecosystem
    candidate: Candidate
    graph: WorkflowGraph
    steps: list[StepTrace] = field(default_factory=list)
    outputs: dict[str, object] = field(default_factory=dict)
    repairs: list[Repair] = field(default_factory=list)
    dirty: bool = False
    """The sandbox may differ from the initial state plus the kept steps."""
    env_changed: bool = False
    """The environment gained something since the kept steps' discoveries ran."""
    written: list[Written] = field(default_factory=list)
    """The kept write steps with the probe states around each (``tasks/execute/purpose.py``)."""
    _pending: Written | None = None
    """The last write step run, until it is kept (:meth:`keep`)."""

    @property
    def sandbox(self) -> Sandbox:
        return self.env.sandbox

    def reset(self) -> None:
        """Bring the sandbox back to the initial state plus the kept steps (checked)."""
        if self.dirty:
            if self.env_changed:  # the states recorded so far lack what was added
                self.written.clear()
            self.steps[:] = replay(self.sandbox, self.eco, self.env.initial, self.steps,
                                   rediscover=self.env_changed)
            self.dirty = self.env_changed = False

    def known_state(self) -> dict | None:
        """The sandbox's probe state when it is known without probing it (nothing failed
        since the last :meth:`reset`): the initial state while the kept steps are all
        reads (a read changes nothing), else the state the last kept write left."""
        if self.dirty:
            return None
        writes = self._writes()
        if not writes:
            return self.env.before
        last = self.written[-1] if self.written else None
        return last.after if last is not None and last.step_id == writes[-1].step_id else None

    def run(self, step: Step) -> StepTrace:
        """Run ``step`` on the kept steps' state (after :meth:`reset`).  A write step is
        probed before and after; StageFailure when it fails or does no work
        (``purposeless``).  :meth:`keep` records a step that stays."""
        tool = self.eco.spec.tool(step.tool)
        self._pending = None
        before = self.known_state()
        if tool.effect == "write" and before is None:
            before = probe(self.sandbox, self.eco)
        st = run_step(self.sandbox, self.eco, self.candidate, step, self.outputs,
                      Known(self.discovered(), self.shown(step), before))
        if tool.effect != "write":
            if step.id == self.graph.steps[-1].id:
                self._check_answer_shows_work(st)
            return st
        assert before is not None
        after = probe(self.sandbox, self.eco)
        why = purposeless(self.eco, tool, st.args, before, after, self.written)
        if why is not None:
            raise StageFailure("execute", "purposeless", f"{tool.name}: {why}")
        entry = written_entry(self.eco, tool, st.args, after)
        self._pending = Written(st.step_id, entry, before, after, tuple(st.args.values()),
                                tuple(tool.returns.settles))
        return st.model_copy(update={"digest": entry_digest(self.eco, after, entry)})

    def _writes(self) -> list[StepTrace]:
        """The kept write steps, in order."""
        return [st for st in self.steps if self.eco.spec.tool(st.tool).effect == "write"]

    def _check_answer_shows_work(self, answer: StepTrace) -> None:
        """The answer must show the work it reports on.

        - When the last write step's result is intermediate (only later reads see it), the
          answer must change without that step: else the reference minus that step — the
          gate's partial control — would pass, and the step has no purpose in the task.
        - In a build task, an answer that reads an entry a write changed in place must
          change without that write (:meth:`_reported_change`).
        - In a fix task, the answer (its report) must change without the repair: a value
          the fault leaves as it is (the sum of a column the fix does not touch, the line
          count of a file whose line endings it converts) is an errand beside the fix, not
          a report on it.

        Runs the other kept writes from the initial state (reads change nothing), then the
        answer's command, leaving the sandbox dirty; raises ``purposeless`` when the answer
        prints the same."""
        writes = self._writes()
        if self.graph.fault:
            repairs = set(self.eco.spec.fault(self.graph.fault).repair)
            left_out = [st for st in writes if st.tool in repairs]
            without = "the repair (" + ", ".join(
                f"step {st.step_id} {st.tool}" for st in left_out) + ")"
        elif writes and self.steps.index(writes[-1]) in flow(
                self.eco.spec, self.graph, Trace(steps=[*self.steps, answer])).intermediate:
            left_out = writes[-1:]
            without = (f"step {writes[-1].step_id} ({writes[-1].tool}), whose result only "
                       "reads use")
        elif (changed := self._reported_change(answer)) is not None:
            left_out = [st for st in writes if st.step_id == changed]
            without = f"step {changed} ({left_out[0].tool}), whose entry it reads"
        else:
            return
        if not left_out:
            return
        self.sandbox.restore(self.env.initial)
        self.dirty = True
        for st in [*(w for w in writes if w not in left_out), answer]:
            again = self.sandbox.exec(shell_argv(st.command),
                                      timeout=self.eco.spec.tool(st.tool).timeout_s)
        if same_observation(again, answer.observation):
            raise StageFailure("execute", "purposeless",
                               f"{answer.tool}: the answer is the same without {without}")

    def _reported_change(self, answer: StepTrace) -> str | None:
        """The id of the last kept write that changed an existing entry the answer reads
        (its key is one of the answer's arguments); None when there is none.  Such an
        answer reports on the change ("the assignee of the ticket you reassigned"), and one
        that reads what the change left alone ("the title of the ticket you unassigned") is
        a question beside the task.  A created entry needs no check: without its write the
        answer has nothing to read."""
        values = set(answer.args.values())
        for w in reversed(self.written):
            if w.entry and w.entry[1] in values and w.entry[1] in w.before.get(w.entry[0], {}):
                return w.step_id
        return None

    def keep(self, st: StepTrace) -> None:
        """``st`` stays in the trace: its output feeds later steps."""
        self.outputs[st.step_id] = st.output
        self.steps.append(st)
        pending = self._pending
        if pending is not None and pending.step_id == st.step_id:
            self.written.append(pending)
        self._pending = None

    def discovered(self) -> set[str]:
        """The discovery commands run before the kept steps (each runs once)."""
        return {d.command for st in self.steps for d in st.discoveries}

    def shown(self, step: Step) -> str:
        """What an instruction writes out before ``step``'s result, when that result is
        the answer (``step`` ends the graph): the kept steps' phrases and labels."""
        if step.id != self.graph.steps[-1].id:
            return ""
        parts = []
        for st in self.steps:
            tool = self.eco.spec.tool(st.tool)
            parts += [render_phrase(source, st.args)
                      for source in (tool.intent, tool.returns.label) if source]
        return "\n".join(parts)

    def attempt(self, step: Step) -> StepTrace | None:
        """Run ``step`` after the kept steps; its trace, or None when it fails too."""
        self.reset()
        try:
            return self.run(step)
        except StageFailure:
            self.dirty = self.dirty or self.eco.spec.tool(step.tool).effect == "write"
            return None


@dataclass(frozen=True)
class Fix:
    trace: StepTrace | None
    """The repaired step's trace; None for a truncation."""
    repair: Repair
    step: Step | None = None
    """The step's replacement when the step itself changed."""


def _fix(run: Run, step: Step, failure: StageFailure, kind: RepairKind, detail: str,
         new: Step | None = None) -> Fix | None:
    trace = run.attempt(new or step)
    if trace is None:
        return None
    if failure.reason == "purposeless":  # why, for the per-pattern figures of stats
        detail = f"{detail} ({failure.detail.partition(': ')[2]})"
    return Fix(trace, Repair(kind=kind, step_id=step.id, reason=failure.reason,
                             detail=detail[:300]), new)


def provide(run: Run, step: Step, failure: StageFailure) -> Fix | None:
    """The missing command's package, the missing output directory or the missing file."""
    if failure.missing is None:
        return None
    what, name = failure.missing
    if what == "command":
        package = run.eco.spec.image.provides.get(name, name)
        if package in run.env.additions.packages or not run.env.add_package(package):
            return None
        run.dirty = run.env_changed = True
        return _fix(run, step, failure, "add_package", f"{package} (for {name})")
    path = relative(run.sandbox, name)
    if path.startswith("../"):
        return None
    tool = run.eco.spec.tool(step.tool)
    outs = {p.name for p in tool.params if p.fresh} | {tool.returns.from_param}
    outputs = {v for n, v in failure.step_args.items() if n in outs}
    parent = posixpath.dirname(path)
    if path in outputs and parent and parent not in run.env.additions.dirs:
        run.env.add(dirs=[parent])
        run.dirty = run.env_changed = True
        return _fix(run, step, failure, "provide_dir", parent)
    try:
        content = run.eco.provide(path, run.candidate.seed)
    except UserCodeError as exc:
        raise user_code_failure("execute", exc) from exc
    if content is None or path in run.env.additions.files:
        return None
    try:
        text = content.decode()
    except UnicodeDecodeError:
        return None
    run.env.add(files={path: text})
    run.dirty = run.env_changed = True
    return _fix(run, step, failure, "provide_file", f"{path} ({len(content)} bytes)")


def _state_alternatives(run: Run, step: Step, name: str) -> list[str]:
    ptype = run.eco.spec.tool(step.tool).param(name).type
    used = {b.value for s in run.graph.steps for b in s.bind.values() if b.kind == "state"}
    return [path for path in sorted(run.env.files) if path not in used
            and (t := run.eco.state_type(path)) and type_satisfies(t, ptype)]


def rebind(run: Run, step: Step, failure: StageFailure) -> Fix | None:
    """Draw the sampled arguments again (:data:`ANSWER_DRAWS` times for a purposeless
    answer); else move one typed state input elsewhere."""
    sampled = [n for n, b in step.bind.items() if b.kind == "sample"]
    answer = failure.reason == "purposeless" and step.id == run.graph.steps[-1].id
    if sampled:
        for draw in range(1, (ANSWER_DRAWS if answer else MAX_TRIES) + 1):
            bind = {n: b.model_copy(update={"draw": b.draw + draw}) if n in sampled else b
                    for n, b in step.bind.items()}
            new = step.model_copy(update={"bind": bind})
            was = {n: failure.step_args.get(n, "?") for n in sampled}
            fix = _fix(run, step, failure, "rebind", f"drew {', '.join(sampled)} again "
                                                     f"(was {was})", new)
            if fix:
                return fix
        return None
    for name, b in step.bind.items():
        if b.kind != "state":
            continue
        for value in _state_alternatives(run, step, name)[:MAX_TRIES]:
            new = step.model_copy(update={"bind": {**step.bind, name: Binding(kind="state",
                                                                             value=value)}})
            fix = _fix(run, step, failure, "rebind", f"{name}={value} (was {b.value})", new)
            if fix:
                return fix
    return None


def substitute(run: Run, step: Step, failure: StageFailure) -> Fix | None:
    """Run a type-compatible tool in the failing step's place."""
    for new in substitutes(run.eco, run.candidate, run.graph, run.steps, run.env.files,
                           step)[:MAX_TRIES]:
        fix = _fix(run, step, failure, "substitute", f"{step.tool} -> {new.tool}", new)
        if fix:
            return fix
    return None


def ask_llm(run: Run, step: Step, failure: StageFailure, repairer: Repairer) -> Fix | None:
    """The LLM's proposal for one argument or one replacement tool, applied if it works."""
    if failure.call is None:
        return None
    options = {s.tool: s for s in substitutes(run.eco, run.candidate, run.graph, run.steps,
                                              run.env.files, step)}
    proposal = repairer(failure.call.model_copy(update={"alternatives": sorted(options)}))
    if proposal is None:
        return None
    if proposal.action == "rebind" and proposal.param in step.bind \
            and step.bind[proposal.param].kind != "step" and proposal.value is not None:
        bind = {**step.bind, proposal.param: Binding(kind="literal", value=proposal.value)}
        return _fix(run, step, failure, "llm_rebind",
                    f"{proposal.param}={proposal.value}: {proposal.rationale}",
                    step.model_copy(update={"bind": bind}))
    if proposal.action == "substitute" and proposal.tool in options:
        return _fix(run, step, failure, "llm_substitute",
                    f"{step.tool} -> {proposal.tool}: {proposal.rationale}",
                    options[proposal.tool])
    return None


def truncate(run: Run, step: Step, failure: StageFailure) -> Fix | None:
    """Drop the failing step and its dependents, when the kept steps changed state."""
    if not any(run.eco.spec.tool(s.tool).effect == "write" for s in run.steps):
        return None
    smaller = run.graph.without({step.id})
    dropped = [s.id for s in run.graph.steps if s not in smaller.steps]
    return Fix(None, Repair(kind="truncate", step_id=step.id, reason=failure.reason,
                            detail=failure.detail[:300], dropped=dropped))


Strategy = Callable[[Run, Step, StageFailure], Fix | None]
ORDER: dict[str, tuple[str, ...]] = {
    "environment": ("provide", "substitute", "llm", "truncate"),
    "binding": ("rebind", "substitute", "llm", "truncate"),
    "degenerate": ("rebind", "substitute", "llm", "truncate"),
    "purposeless": ("rebind", "substitute", "llm", "truncate"),
    "ambiguous": ("rebind", "substitute", "truncate"),
    "tool_error": ("substitute", "rebind", "llm", "truncate"),
    "timeout": ("substitute", "truncate"),
    "resource": ("substitute", "truncate"),
}
STRATEGIES: dict[str, Strategy] = {"provide": provide, "rebind": rebind,
                                   "substitute": substitute, "truncate": truncate}


TOOL_FAILURES = frozenset({"environment", "tool_error", "timeout", "resource"})
"""Failures of the tool itself, which ``strict`` never repairs by replacing or dropping it."""
HIDING = frozenset({"substitute", "llm", "truncate"})
"""Strategies that replace or drop the failing tool (``llm``: the LLM's substitute, and its
rebind with it: under ``strict`` the LLM is not asked about a tool failure)."""


def repair(run: Run, step: Step, failure: StageFailure, repairer: Repairer | None,
           strict: bool = False) -> Fix | None:
    """The first strategy for ``failure``'s category that fixes ``step``, or None.  With
    ``strict``, a failure of the tool itself is fixed only where the tool then runs
    (a provided file, directory or package; new arguments), never by another tool or by
    dropping it: otherwise the candidate is rejected with the tool's failure.  A fault's
    repair tool is never replaced or dropped, whatever failed: a fix task without its
    repair would be another task."""
    fixes_fault = run.eco.spec.tool(step.tool).repair
    for name in ORDER.get(failure.reason, ()):
        if name in HIDING and (fixes_fault or strict and failure.reason in TOOL_FAILURES):
            continue
        if name == "llm":
            fix = ask_llm(run, step, failure, repairer) if repairer else None
        else:
            fix = STRATEGIES[name](run, step, failure)
        if fix is not None:
            return fix
    return None
