"""Exercise an ecosystem in one sandbox: every tool once, each write's probe delta, each
sampled value and the state it was drawn from, and each alternative command's result
beside the command's (for the conformance suite, :mod:`tasks.conformance.checks`).

Graphs come from the real planner (it favours tools it has used least, so a few dozen
candidates cover every tool); each candidate's seed is realized in the same sandbox, from
the snapshot of its empty workspace, so an ecosystem costs one sandbox per backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from environments.sandbox import Sandbox, Snapshot
from schemas.ecosystem import ProbeSection
from schemas.graph import Binding, Candidate, WorkflowGraph
from tasks.core.commands import render_shell, shell_argv
from tasks.core.failures import StageFailure
from tasks.execute.realize import probe, realize
from tasks.execute.steps import run_step
from tasks.plan.planner import iter_candidates
from tasks.verify.comparisons import COMPARE

MAX_CANDIDATES = 300
"""Candidates planned, at most, to find ones that use each tool (planning is cheap: only
candidates with a tool still to run are executed)."""
DEPTH_WEIGHTS = {1: 1.0, 2: 1.0, 3: 1.0}
"""Short graphs: a step after a failing one never runs, so long chains cover less."""
TRIES = 3
"""Candidates a failing tool is run in before its failure stands: a planned binding may
not fit (two unrelated files have no line in common), which a run repairs."""


@dataclass
class Sampled:
    """One sampled argument: the sampler, the value it drew, and what it drew from (the
    bytes of the file bound to ``of``, or the probe state)."""

    facet: str
    value: str
    content: bytes | dict[str, Any]
    draws: str = "member"
    """What its parameter declares the value to be (``schemas.ecosystem.Draws``)."""

    @property
    def text(self) -> str:
        """``content`` as text (the probe state as canonical JSON)."""
        if isinstance(self.content, bytes):
            return self.content.decode(errors="replace")
        return canonical(self.content)


@dataclass
class ToolRun:
    """A tool's first successful run (or, after ``TRIES`` failures, its last): ``failure``
    (``stage/reason: detail``) or its parsed output, and for a write, the entry it declares
    and the ones that changed, per probe section."""

    tool: str
    failure: str | None = None
    tries: int = 1
    output: object = None
    declared: str | None = None
    changed: dict[str, set[str]] = field(default_factory=dict)
    sampled: list[Sampled] = field(default_factory=list)
    differing: dict[str, str] = field(default_factory=dict)
    """Alternative command -> how its result differs from the command's (stdout for a
    read, the probe state for a write); an alternative that agrees is not listed."""
    alternatives_run: int = 0


def _changed(before: dict[str, dict[str, object]], after: dict[str, dict[str, object]]
             ) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for section in set(before) | set(after):
        old, new = before.get(section, {}), after.get(section, {})
        keys = {k for k in set(old) | set(new) if old.get(k, ...) != new.get(k, ...)}
        if keys:
            out[section] = keys
    return out


def canonical(state: object) -> str:
    return json.dumps(state, sort_keys=True, separators=(",", ":"))


class Exercise:
    """Runs ``eco``'s tools in ``sandbox`` (open, workspace empty); see the module doc."""

    def __init__(self, eco: Ecosystem, sandbox: Sandbox, broken: frozenset[str] = frozenset(),
                 run_seed: int = 7) -> None:
        """``broken``: tools expected to fail, run once (not ``TRIES`` times)."""
        self.eco, self.sandbox, self.run_seed, self.broken = eco, sandbox, run_seed, broken
        self.blank: Snapshot = sandbox.snapshot()
        self.runs: dict[str, ToolRun] = {}
        self.unrealized: dict[int, str] = {}
        """Seeds the ecosystem's seed failed for (their candidates are skipped)."""

    def realize(self, seed: int, fault: str | None = None) -> bool:
        """The sandbox holds the initial state of ``seed`` (with ``fault`` planted, for a
        fix candidate, whose repair tools need it); False when the seed fails."""
        if seed in self.unrealized:
            return False
        self.sandbox.restore(self.blank)
        try:
            realize(self.sandbox, self.eco, seed, fault=fault)
        except StageFailure as failure:
            self.unrealized[seed] = f"{failure.reason}: {failure.detail}"
            return False
        return True

    def candidate(self, graph: WorkflowGraph, seed: int) -> Candidate:
        """``graph`` on ``seed`` as a candidate of this exercise."""
        return Candidate(candidate_id=f"conformance-{seed}", index=0,
                         ecosystem=self.eco.name, seed=seed, graph=graph)

    def run_all(self) -> dict[str, ToolRun]:
        """Every tool's first run (a tool no planned candidate uses is missing)."""
        for candidate, _ in iter_candidates(self.eco, MAX_CANDIDATES, self.run_seed,
                                            DEPTH_WEIGHTS):
            todo = {t.name for t in self.eco.spec.tools if not self._done(t.name)}
            if not todo:
                break
            if todo & {s.tool for s in candidate.graph.steps} and self.realize(
                    candidate.seed, candidate.graph.fault):
                self._run(candidate)
        return self.runs

    def _done(self, tool: str) -> bool:
        run = self.runs.get(tool)
        return run is not None and (run.failure is None or run.tries >= self._tries(tool))

    def _tries(self, tool: str) -> int:
        return 1 if tool in self.broken else TRIES

    def _record(self, run: ToolRun) -> None:
        known = self.runs.get(run.tool)
        if known is None or (known.failure is not None and known.tries < self._tries(run.tool)):
            run.tries = known.tries + 1 if known is not None else 1
            self.runs[run.tool] = run

    def _run(self, candidate: Candidate) -> None:
        outputs: dict[str, object] = {}
        for step in candidate.graph.steps:
            tool = self.eco.spec.tool(step.tool)
            run = ToolRun(tool.name)
            before = probe(self.sandbox, self.eco)
            sources = {p.name: self._source(step.bind[p.sample.of] if p.sample.of else None,
                                            outputs, before)
                       for p in tool.params if p.sample is not None}
            start = self.sandbox.snapshot() if self._alternatives_due(tool.name) else None
            try:
                trace = run_step(self.sandbox, self.eco, candidate, step, outputs)
            except (StageFailure, UserCodeError) as failure:
                detail = (f"{failure.stage}/{failure.reason}: {failure.detail}"
                          if isinstance(failure, StageFailure) else str(failure))
                self._record(ToolRun(tool.name, failure=detail))
                return
            outputs[step.id] = run.output = trace.output
            run.sampled = [Sampled(p.sample.facet, trace.args[p.name], sources[p.name],
                                   p.sample.draws)
                           for p in tool.params if p.sample is not None]
            after = probe(self.sandbox, self.eco)
            if tool.effect == "write" and tool.returns.from_param:
                run.declared = trace.args[tool.returns.from_param]
                run.changed = _changed(before, after)
            if start is not None:
                self._compare_alternatives(run, start, trace.args, trace.observation.stdout,
                                           after)
            self._record(run)

    def _alternatives_due(self, tool: str) -> bool:
        """The tool has alternatives and no successful run compared them yet."""
        done = self.runs.get(tool)
        return bool(self.eco.spec.tool(tool).alternatives) and (
            done is None or done.failure is not None)

    def _compare_alternatives(self, run: ToolRun, start: Snapshot, args: dict[str, str],
                              stdout: str, after: dict[str, Any]) -> None:
        """Run each alternative of ``run``'s tool from ``start`` with the same ``args``:
        a read must print what the command printed, a write must leave the probe state the
        command left.  The sandbox is left as the command left it."""
        tool = self.eco.spec.tool(run.tool)
        end = self.sandbox.snapshot()
        for alternative in tool.alternatives:
            self.sandbox.restore(start)
            result = self.sandbox.exec(shell_argv(render_shell(alternative, args)),
                                       timeout=tool.timeout_s)
            run.alternatives_run += 1
            if result.exit_code != 0:
                run.differing[alternative] = f"exits {result.exit_code}: " \
                    f"{result.stderr.strip()[-120:]}"
            elif tool.effect == "read" and result.stdout.strip() != stdout.strip():
                run.differing[alternative] = f"prints {result.stdout.strip()[:80]!r}, the " \
                    f"command {stdout.strip()[:80]!r}"
            elif tool.effect == "write" and (diff := self._unequal(
                    after, probe(self.sandbox, self.eco), args.get(tool.returns.from_param or "",
                                                                   ""), tool.returns.compare)):
                run.differing[alternative] = f"leaves other state in {sorted(diff)}: " \
                    f"{sorted(k for keys in diff.values() for k in keys)[:3]}"
        self.sandbox.restore(end)

    def _unequal(self, want: dict[str, Any], got: dict[str, Any], output: str,
                 compare: str | None) -> dict[str, set[str]]:
        """The probe entries where ``got`` differs from ``want``, the way a verifier compares
        them: the tool's ``output`` entry under the tool's ``compare`` (else its section's),
        every other entry exactly."""
        diff = _changed(want, got)
        for section, keys in list(diff.items()):
            mode = compare or self.eco.spec.probe_sections.get(section, ProbeSection()).compare
            if output in keys and output in want.get(section, {}) and output in got.get(
                    section, {}) and COMPARE[mode](got[section][output], want[section][output]):
                keys.discard(output)
            if not keys:
                del diff[section]
        return diff

    def _source(self, of: Binding | None, outputs: dict[str, object],
                before: dict[str, Any]) -> bytes | dict[str, Any]:
        """What a sampler draws from: the file its ``of`` parameter is bound to, or the
        probe state."""
        if of is None:
            return before
        path = str(outputs[of.step or ""]) if of.kind == "step" else str(of.value)
        try:
            return self.sandbox.read_file(path)
        except FileNotFoundError:
            return b""
