"""The conformance checks of one ecosystem, each a :class:`Finding` naming the checklist
section of the ecosystem reference that fixes it.

:func:`seed_findings` needs no sandbox; :func:`sandbox_findings` exercises the ecosystem in
one open sandbox (:class:`~tasks.conformance.exercise.Exercise`): the probe is canonical,
stable and deaf to links and FIFOs planted in the workspace (the threat model of the
ecosystem contract), each probe section's vandal commands change what the probe prints,
every tool runs and parses, every sampler returns what it declares, every write changes
exactly its declared entry, every alternative gives the command's result, and every fault
injector plants one defect that its repair removes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from environments.ecosystems import Ecosystem
from environments.ecosystems.usercode import UserCodeError
from tasks.conformance.exercise import Exercise, Sampled, ToolRun, canonical
from tasks.core.commands import render_shell, shell_argv
from tasks.core.failures import StageFailure
from tasks.execute.realize import probe, state_without
from tasks.execute.steps import run_step
from tasks.plan.mix import REFERENCE, plantable
from tasks.plan.planner import PlanningError, plan_graph

SEEDS = range(5)
PLANT = ("mkdir -p {outside} && printf '%s\\n' {secret} > {outside}/secret.txt "
         "&& ln -s {outside} linked && ln -s {outside}/secret.txt linked.txt && mkfifo pipe")


@dataclass(frozen=True)
class Finding:
    """One check's outcome: ``ok``, the check's name, a one-line ``detail`` and the
    checklist ``section`` of the ecosystem reference (its anchor) that fixes it."""

    check: str
    ok: bool
    detail: str
    section: str

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        where = "" if self.ok else f" (see {REFERENCE}#{self.section})"
        return f"{mark} {self.check}: {self.detail}{where}"


def seed_findings(eco: Ecosystem) -> list[Finding]:
    """The seed is deterministic (same seed, same bytes) and ``layout`` lists its files.
    Called twice past the process's seed cache (:meth:`Ecosystem.seed_state` keeps one)."""
    for seed in SEEDS:
        try:
            files = eco.seed_fn(seed)
            again, paths = eco.seed_fn(seed), eco.state_paths(seed)
        except UserCodeError as exc:
            return [Finding("seed", False, f"seed {seed} fails: {exc}", "1-seed")]
        if again != files:
            changed = sorted(p for p in set(files) | set(again) if files.get(p) != again.get(p))
            return [Finding("seed", False, f"not deterministic: seed {seed} gives other bytes "
                            f"a second time ({changed[:2]})", "1-seed")]
        if sorted(paths) != sorted(files):
            return [Finding("seed", False, f"layout({seed}) lists other files than generate "
                            "writes", "1-seed")]
    return [Finding("seed", True, f"deterministic and laid out for seeds 0..{SEEDS[-1]}",
                    "1-seed")]


def sandbox_findings(exercise: Exercise) -> list[Finding]:
    """Every check that needs the sandbox (see the module doc); runs every tool first."""
    if not any(exercise.realize(s) for s in SEEDS):
        detail = next(iter(exercise.unrealized.values()), "no seed realizes")
        return [Finding("seed", False, f"no seed realizes: {detail}", "1-seed")]
    found = [*_probe_findings(exercise), *_vandal_findings(exercise)]
    exercise.run_all()
    runs = exercise.runs
    found += [_samplers_finding(exercise.eco, runs), _tools_finding(exercise.eco, runs),
              _writes_finding(exercise.eco, runs), *_alternatives_findings(runs)]
    return found + _injector_findings(exercise)


def up_to_first_failure(findings: list[Finding]) -> tuple[list[Finding], int]:
    """The findings up to the first that fails (later checks build on what it checks: a
    sampler that draws nothing valid makes its tools fail too), and how many are left
    out."""
    first = next((i for i, f in enumerate(findings) if not f.ok), len(findings))
    return findings[:first + 1], max(0, len(findings) - first - 1)


def _first_seed(exercise: Exercise) -> int:
    return next(s for s in SEEDS if exercise.realize(s))


def _probe_findings(exercise: Exercise) -> list[Finding]:
    eco, sandbox = exercise.eco, exercise.sandbox
    _first_seed(exercise)
    outputs = [sandbox.exec(["python3", "-"], stdin=eco.probe_source.encode(), timeout=60)
               for _ in range(2)]
    if outputs[0].exit_code != 0:
        return [Finding("probe", False, f"fails: {outputs[0].stderr.strip()[-160:]}",
                        "3-probe")]
    state = json.loads(outputs[0].stdout)
    if not (isinstance(state, dict) and all(isinstance(v, dict) for v in state.values())):
        return [Finding("probe", False, "prints no {section: {key: value}} mapping", "3-probe")]
    if outputs[0].stdout.rstrip("\n") != canonical(state):
        return [Finding("probe", False, "not canonical JSON (sorted keys, no spaces)",
                        "3-probe")]
    if outputs[1].stdout != outputs[0].stdout:
        return [Finding("probe", False, "a second probe prints something else", "3-probe")]
    return [Finding("probe", True, f"canonical and stable ({len(state)} sections)", "3-probe"),
            _threat_finding(exercise)]


def _threat_finding(exercise: Exercise) -> Finding:
    """The probe finishes with a FIFO in the workspace and prints nothing behind links."""
    eco, sandbox = exercise.eco, exercise.sandbox
    secret, outside = "tf-outside-secret", "/tmp/tf-outside"
    sandbox.exec(["bash", "-c", PLANT.format(outside=outside, secret=secret)])
    result = sandbox.exec(["python3", "-"], stdin=eco.probe_source.encode(), timeout=30)
    sandbox.exec(["rm", "-rf", outside])
    if result.timed_out:
        return Finding("probe trust", False, "the probe blocks on a FIFO", "3-probe")
    if result.exit_code != 0 or secret in result.stdout:
        why = "follows a link out of the workspace" if result.exit_code == 0 else \
            f"fails on a planted link or FIFO: {result.stderr.strip()[-120:]}"
        return Finding("probe trust", False, f"the probe {why}", "3-probe")
    return Finding("probe trust", True, "deaf to links and FIFOs planted in the workspace",
                   "3-probe")


def _vandal_findings(exercise: Exercise) -> list[Finding]:
    """Each vandal command, run on a seeded entry of its section, changes what the probe
    prints: a probe that does not see it is too lax to check the section."""
    eco, sandbox = exercise.eco, exercise.sandbox
    seed = _first_seed(exercise)
    state = probe(sandbox, eco)
    tried = 0
    for name, section in sorted(eco.spec.probe_sections.items()):
        for key in sorted(state.get(name, {}))[:1]:
            for command in section.vandal:
                exercise.realize(seed)
                done = sandbox.exec(shell_argv(render_shell(command, {"key": key})),
                                    timeout=30)
                tried += 1
                if not done.ok:
                    return [Finding("probe strictness", False, f"section {name}: `{command}` "
                                    f"fails on {key!r} (exit {done.exit_code}: "
                                    f"{done.stderr.strip()[-120:]})",
                                    "10-shared-and-scratch-sections")]
                if probe(sandbox, eco).get(name, {}) == state[name]:
                    return [Finding("probe strictness", False, f"section {name}: the probe "
                                    f"does not see `{command}` change {key!r}",
                                    "10-shared-and-scratch-sections")]
    exercise.realize(seed)
    bare = sorted(n for n, sec in eco.spec.probe_sections.items()
                  if sec.checked and not sec.vandal)
    return [Finding("probe strictness", True, f"sees each of {tried} vandal changes"
                    + (f" (sections without vandal commands: {bare})" if bare else ""),
                    "10-shared-and-scratch-sections")]


def _tools_finding(eco: Ecosystem, runs: dict[str, ToolRun]) -> Finding:
    """Every tool runs and parses; repair tools are the injectors' check (they fail where
    their fault planted nothing, and a lookup that finds nothing leaves the next repair
    step unrun: the injectors' check runs each from its planted state)."""
    never = sorted(t.name for t in eco.spec.tools if t.name not in runs and not t.repair)
    if never:
        return Finding("tools", False, f"no planned graph uses {never}", "2-tools")
    failed = {n: r.failure for n, r in sorted(runs.items())
              if r.failure and not eco.spec.tool(n).repair}
    if failed:
        name, why = next(iter(failed.items()))
        return Finding("tools", False, f"{len(failed)} fail, e.g. {name}: {why}", "2-tools")
    return Finding("tools", True, f"all {len(runs)} run and their output parses", "2-tools")


def drawn_from(s: Sampled) -> bool:
    """``s.value`` is in its input as it is, or in the derived form it declares."""
    text = s.text
    if s.draws == "lowercase":
        return s.value in text.lower()
    if s.draws == "comma_joined":
        return all(part and part in text for part in s.value.split(","))
    if s.draws == "release_tag":
        return f"Release {s.value.removeprefix('v')}" in text
    return s.draws in ("new", "derived") or s.value in text


def _samplers_finding(eco: Ecosystem, runs: dict[str, ToolRun]) -> Finding:
    drawn = [s for r in runs.values() for s in r.sampled]
    for s in drawn:
        if not (isinstance(s.value, str) and s.value):
            return Finding("samplers", False, f"{s.facet} returns {s.value!r}, not a "
                           "non-empty string", "4-samplers")
        if not drawn_from(s):
            return Finding("samplers", False, f"{s.facet} returns {s.value!r}, which is not "
                           f"in what it was given (declare `draws:` if it is {s.draws!r} "
                           "by design)", "4-samplers")
    for s in {s.facet: s for s in drawn}.values():
        if len({_draw(eco, s.facet, s.content) for _ in range(2)} - {None}) > 1:
            return Finding("samplers", False, f"{s.facet} draws differently from the same "
                           "random generator", "4-samplers")
    return Finding("samplers", True, f"{len({s.facet for s in drawn})} return what they "
                   "declare, the same for the same generator", "4-samplers")


def _draw(eco: Ecosystem, facet: str, content: bytes | dict[str, Any]) -> str | None:
    try:
        return eco.sample(facet, content, random.Random(11))
    except (LookupError, ValueError, UserCodeError):  # needs context it was not given here
        return None


def _writes_finding(eco: Ecosystem, runs: dict[str, ToolRun]) -> Finding:
    sections = eco.spec.probe_sections
    writes = [r for r in runs.values() if r.declared is not None]
    for run in writes:
        checked = {s: keys for s, keys in run.changed.items()
                   if s not in sections or sections[s].checked}
        if not any(run.declared in keys for keys in checked.values()):
            return Finding("writes", False, f"{run.tool} did not change the entry it declares "
                           f"({run.declared!r}) in the probe", "3-probe")
        strict = {s: sorted(keys - {run.declared}) for s, keys in checked.items()
                  if (s not in sections or sections[s].strict) and keys - {run.declared}}
        if strict:
            return Finding("writes", False, f"{run.tool} declares {run.declared!r} but also "
                           f"changed {strict}", "2-tools")
    return Finding("writes", True, f"{len(writes)} change exactly what they declare",
                   "2-tools")


def _alternatives_findings(runs: dict[str, ToolRun]) -> list[Finding]:
    compared = sum(r.alternatives_run for r in runs.values())
    for run in runs.values():
        for alternative, how in run.differing.items():
            return [Finding("alternatives", False, f"{run.tool}'s alternative `{alternative}` "
                            f"differs from its command: it {how}", "5-alternatives")]
    return [Finding("alternatives", True, f"{compared} give the command's result",
                    "5-alternatives")] if compared else []


def _injector_findings(exercise: Exercise) -> list[Finding]:
    eco = exercise.eco
    if eco.spec.faults is None:
        return []
    for fault in eco.spec.faults.injectors:
        problem = _injector_problem(exercise, fault.name)
        if problem:
            return [Finding("fault injectors", False, f"{fault.name}: {problem}", "8-faults")]
    return [Finding("fault injectors", True, f"{len(eco.spec.faults.injectors)} plant one "
                    "defect each, and their repair removes it", "8-faults")]


def _injector_problem(exercise: Exercise, fault: str) -> str | None:
    """Why ``fault`` does not plant one defect its repair removes, or None."""
    eco, sandbox = exercise.eco, exercise.sandbox
    seed = next((s for s in SEEDS if plantable(eco, s, fault)), None)
    if seed is None or not exercise.realize(seed):
        return f"plants nothing in seeds 0..{SEEDS[-1]}"
    healthy = probe(sandbox, eco)
    if not exercise.realize(seed, fault):
        return f"its planted seed does not realize: {exercise.unrealized.get(seed)}"
    planted = probe(sandbox, eco)
    sections = eco.spec.probe_sections
    broken = [(s, k) for s in set(planted) | set(healthy)
              if s not in sections or sections[s].checked
              for k in set(planted.get(s, {})) | set(healthy.get(s, {}))
              if planted.get(s, {}).get(k) != healthy.get(s, {}).get(k)]
    if not broken:
        return "does not plant: the planted state is the healthy one"
    try:
        graph = plan_graph(eco, seed, fault=fault)
    except PlanningError as exc:
        return f"its repair cannot be planned: {exc}"
    candidate = exercise.candidate(graph, seed)
    outputs: dict[str, object] = {}
    try:
        for step in graph.steps[:len(eco.spec.fault(fault).repair)]:
            outputs[step.id] = run_step(sandbox, eco, candidate, step, outputs).output
    except (StageFailure, UserCodeError) as exc:
        return f"its repair fails: {exc}"
    answer = eco.spec.answer_file
    if state_without(probe(sandbox, eco), answer) != state_without(healthy, answer):
        return "its repair leaves the state other than healthy"
    return None
