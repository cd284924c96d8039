"""The run's mix: what each candidate is before its graph is planned.

Three draws, each deterministic in the run seed and the candidate's index:

- its **kind** (``build``, ``fix`` or ``reconstruct``) with the run's kind weights
  (:data:`DEFAULT_KINDS`).  A kind the ecosystem cannot give (fix without fault injectors,
  reconstruct where the state lives in a running service: a program is given a folder) is
  refused before the run (:func:`unavailable`) unless the mix asks for it *where
  possible* (``fix?:1``); then those candidates are build tasks, and the run says so;
- for a fix task, its **fault**: one of the ecosystem's injectors, those the run has used
  least first;
- its **scenario** (:class:`schemas.ecosystem.Scenario`): with the run's
  ``off_scenario`` share (:data:`OFF_SCENARIO_SHARE`) none, else one of the ecosystem's
  scenarios by weight, those the run has used least favoured (and the others that fit, to
  try when its graphs are taken); a fix task's scenarios are those that list its fault
  (none when no scenario does).
"""

from __future__ import annotations

import math
import random
from collections import Counter

from environments.ecosystems import Ecosystem
from schemas.graph import TASK_KINDS, TaskKind

DEFAULT_KINDS: dict[TaskKind, float] = {"build": 2, "fix": 1}
"""Relative weight of each task kind."""
DEFAULT_WHERE_POSSIBLE: tuple[TaskKind, ...] = ("fix",)
"""Kinds the default mix asks for where possible (``build:2,fix?:1``)."""
REFERENCE = "docs/ecosystem-reference.md"
"""The ecosystem reference; ``REFERENCE#<anchor>`` names the section that fixes a gap."""
OFF_SCENARIO_SHARE = 0.1
"""Share of candidates planned outside any scenario (over every tool of the ecosystem)."""


def weights_problem(weights: dict) -> str | None:
    """What is wrong with relative ``weights`` (each finite and >= 0, one positive), or
    None: the one rule for depth and kind weights, from the CLI or a deployment alike."""
    bad = [w for w in weights.values() if not (math.isfinite(w) and w >= 0)]
    if bad:
        return f"weights must be finite numbers >= 0, got {bad[0]}"
    if not any(weights.values()):
        return "at least one weight must be positive"
    return None


def parse_weights(text: str, expected: str) -> dict[str, float]:
    """``"a:2,b:1"`` -> ``{"a": 2.0, "b": 1.0}`` (a bare key weighs 1); ValueError names
    the part that is not a ``key:weight`` pair (and what was ``expected``), or what
    :func:`weights_problem` finds."""
    weights: dict[str, float] = {}
    for part in text.split(","):
        key, _, weight = part.partition(":")
        try:
            value: float | None = float(weight or 1)
        except ValueError:
            value = None
        if not key.strip() or value is None:
            raise ValueError(f"expected {expected} with weights >= 0, got {part!r}")
        weights[key.strip()] = value
    problem = weights_problem(weights)
    if problem:
        raise ValueError(problem)
    return weights


def parse_mix(text: str) -> tuple[dict[TaskKind, float], list[TaskKind]]:
    """``"build:2,fix?:1"`` -> ``({"build": 2.0, "fix": 1.0}, ["fix"])``: the kind weights
    and the kinds asked for *where possible* (a ``?`` after the kind); ValueError names
    what is wrong."""
    marked = parse_weights(text, "kind:weight pairs like build:2,fix:1 (fix?:1: where "
                                 "possible)")
    weights = {k.removesuffix("?"): w for k, w in marked.items()}
    unknown = [k for k in weights if k not in TASK_KINDS]
    if unknown:
        raise ValueError(f"unknown kind {unknown[0]!r}; kinds are {', '.join(TASK_KINDS)} "
                         "(a ? after one asks for it where possible)")
    possible = [k for k in weights if f"{k}?" in marked]
    return weights, possible  # type: ignore[return-value]  # keys checked against TASK_KINDS


def parse_kinds(text: str) -> dict[TaskKind, float]:
    """The kind weights of :func:`parse_mix` (``"build:2,fix:1"`` -> ``{"build": 2.0,
    "fix": 1.0}``)."""
    return parse_mix(text)[0]


def unavailable(eco: Ecosystem, kinds: dict[TaskKind, float], where_possible: list[str],
                require_observation: bool = False) -> list[str]:
    """What the run asks of ``eco`` that it cannot give, one line each naming what to add
    (and the reference section): a kind with a weight that is not asked *where possible*,
    and tasks that need observation from an ecosystem with neither describers nor
    discovery.  Empty when it can give everything asked."""
    name, spec = eco.name, eco.spec
    gaps = []
    if kinds.get("fix") and "fix" not in where_possible and spec.faults is None:
        gaps.append(f"ecosystem {name} has no fault injectors, so it makes no fix tasks: add "
                    f"`faults:` to its ecosystem.yaml ({REFERENCE}#8-faults), or ask for "
                    "fix tasks where possible (--kinds build:2,fix?:1)")
    if kinds.get("reconstruct") and "reconstruct" not in where_possible and spec.service:
        gaps.append(f"ecosystem {name} keeps its state in a running service, and a "
                    "reconstruct task's program works on a folder: give it a folder "
                    f"interface ({REFERENCE}#reconstruct-tasks), or ask for reconstruct tasks "
                    "where possible (--kinds build:2,reconstruct?:1)")
    if require_observation and not (spec.describers or spec.discovery):
        gaps.append(f"ecosystem {name} declares neither describers nor discovery, so no task "
                    "of it needs observation: add `describers:` to its ecosystem.yaml "
                    f"({REFERENCE}#7-describers), or drop --require-observation")
    return gaps


def downgraded(eco: Ecosystem, kinds: dict[TaskKind, float]) -> list[str]:
    """The kinds asked where possible that ``eco`` plans as build tasks, one note each (none
    for a stack whose scenarios list no fault: its tasks are the jobs across its members,
    and its members' fix tasks are made where they stand alone)."""
    notes = []
    if kinds.get("fix") and eco.spec.faults is None and not eco.members:  # a stack's jobs
        notes.append(f"ecosystem {eco.name} has no fault injectors: its share of fix tasks "
                     f"is planned as build tasks (add `faults:`, {REFERENCE}#8-faults)")
    if kinds.get("reconstruct") and eco.spec.service is not None:
        notes.append(f"ecosystem {eco.name} keeps its state in a service: its share of "
                     "reconstruct tasks is planned as build tasks")
    return notes


def plantable(eco: Ecosystem, seed: int, fault: str, scale: int = 1) -> bool:
    """The seed (at ``scale``) has a place for the fault's defect (its ``plant`` finds what
    it breaks)."""
    try:
        eco.seed_state(seed, fault, scale)
    except LookupError:
        return False
    return True


def _kind_draw(index: int, run_seed: int, kinds: dict[TaskKind, float]) -> tuple[
        random.Random, float]:
    """The kind draw of candidate ``index``: its generator and a point in [0, total weight)
    (fix below its weight, reconstruct next, build above)."""
    rng = random.Random(f"taskfactory:kind:{run_seed}:{index}")
    return rng, rng.random() * sum(kinds.values())


def draws_reconstruct(eco: Ecosystem, index: int, run_seed: int,
                      kinds: dict[TaskKind, float]) -> bool:
    """Candidate ``index`` is a reconstruct task (never on an ecosystem with a service)."""
    if not kinds.get("reconstruct") or eco.spec.service is not None:
        return False
    fix = kinds.get("fix", 0)
    return fix <= _kind_draw(index, run_seed, kinds)[1] < fix + kinds["reconstruct"]


def draw_fault(eco: Ecosystem, index: int, run_seed: int, kinds: dict[TaskKind, float],
               faults_used: Counter[str], excluded: frozenset[str] = frozenset()
               ) -> str | None:
    """The fault injector candidate ``index`` starts from, the least used of those not
    ``excluded`` (faults whose fix tasks the run holds all of, or that the candidate tried
    already), or None for a build task (also when every fault is excluded)."""
    if eco.spec.faults is None or not kinds.get("fix"):
        return None
    rng, point = _kind_draw(index, run_seed, kinds)
    if point >= kinds["fix"]:
        return None
    names = [f.name for f in eco.spec.faults.injectors if f.name not in excluded]
    if not names:
        return None
    fewest = min(faults_used[n] for n in names)
    return rng.choice([n for n in names if faults_used[n] == fewest])


def draw_scenarios(eco: Ecosystem, index: int, run_seed: int, fault: str | None,
                   off_scenario: float, used: Counter[str]) -> list[str]:
    """The scenarios candidate ``index`` may be planned in, in the order to try them: the
    one drawn, then the others that fit it, least used first (a scenario whose graphs the
    run already holds gives way to another); empty outside any scenario."""
    rng = random.Random(f"taskfactory:scenario:{run_seed}:{index}")
    if not eco.spec.scenarios or rng.random() < off_scenario:
        return []
    pool = [s for s in eco.spec.scenarios if fault is None or fault in s.faults]
    if not pool:
        return []
    drawn = rng.choices(pool, weights=[s.weight / (1 + used[s.name]) for s in pool])[0]
    rest = sorted((s for s in pool if s is not drawn), key=lambda s: used[s.name])
    return [drawn.name, *(s.name for s in rest)]
