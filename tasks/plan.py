"""Planning: seeded chain workflows whose every input is satisfiable by construction.

Each candidate gets its own seed, derived from the run seed and its index.  The planner
builds the candidate's seeded state (pure Python), then grows a chain: the first step
reads typed files from the state; each later step consumes the previous step's output
through a type-compatible parameter.  Literals that depend on file contents (patterns,
column names, values) are bound as ``sample`` and resolved at execution time from what
is really in the sandbox.  Duplicate fingerprints within a run are re-planned.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec, type_satisfies
from schemas.graph import Binding, Candidate, Step, WorkflowGraph

MAX_REPLANS = 25


class PlanningError(RuntimeError):
    """No satisfiable graph could be planned."""


@dataclass(frozen=True)
class PlanStats:
    planned: int
    duplicates_replanned: int


def candidate_seed(run_seed: int, index: int) -> int:
    digest = hashlib.sha256(f"taskfactory:{run_seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _typed_params(tool: ToolSpec) -> list[str]:
    return [p.name for p in tool.params if p.sample is None and p.type != "path.out"]


def _state_choices(tool: ToolSpec, state: dict[str, str], pname: str) -> list[str]:
    ptype = tool.param(pname).type
    return sorted(path for path, t in state.items() if type_satisfies(t, ptype))


def _can_start(tool: ToolSpec, state: dict[str, str]) -> bool:
    return all(_state_choices(tool, state, p) for p in _typed_params(tool))


def _consumer_params(tool: ToolSpec, out_type: str, state: dict[str, str]) -> list[str]:
    """Params of ``tool`` that can take ``out_type``, when its other inputs are satisfiable."""
    names = []
    for pname in _typed_params(tool):
        if not type_satisfies(out_type, tool.param(pname).type):
            continue
        others = [o for o in _typed_params(tool) if o != pname]
        if all(_state_choices(tool, state, o) for o in others):
            names.append(pname)
    return names


def _bind_step(tool: ToolSpec, step_id: str, rng: random.Random, state: dict[str, str],
               upstream: tuple[str, str] | None, used_paths: set[str]) -> Step:
    bind: dict[str, Binding] = {}
    for p in tool.params:
        if p.sample is not None:
            bind[p.name] = Binding(kind="sample", facet=p.sample.facet, of=p.sample.of)
        elif p.type == "path.out":
            stem, n = f"out/{p.stem or p.name}", 1
            path = f"{stem}.{p.ext}"
            while path in used_paths:
                n += 1
                path = f"{stem}_{n}.{p.ext}"
            used_paths.add(path)
            bind[p.name] = Binding(kind="literal", value=path)
        elif upstream is not None and p.name == upstream[0]:
            bind[p.name] = Binding(kind="step", step=upstream[1])
        else:
            value = rng.choice(_state_choices(tool, state, p.name))
            bind[p.name] = Binding(kind="state", value=value)
    return Step(id=step_id, tool=tool.name, bind=bind)


def plan_chain(eco: Ecosystem, seed: int, max_depth: int = 3) -> WorkflowGraph:
    """One chain of depth 1..max_depth over the state seeded with ``seed``."""
    rng = random.Random(seed)
    files = eco.seed_state(seed)
    state = {p: t for p in files if (t := eco.state_type(p))}
    tools = eco.spec.tools
    starters = [t for t in tools if _can_start(t, state)]
    if not starters:
        raise PlanningError(f"no tool of {eco.name!r} can start from the seeded state")
    depth = rng.randint(1, max_depth)
    used: set[str] = set()
    tool = rng.choice(starters)
    steps = [_bind_step(tool, "s1", rng, state, None, used)]
    while len(steps) < depth and tool.effect == "write":
        out_type = tool.returns.type
        options = [(t, pn) for t in tools for pn in _consumer_params(t, out_type, state)]
        if not options:
            break
        tool, pname = rng.choice(options)
        steps.append(_bind_step(tool, f"s{len(steps) + 1}", rng, state, (pname, steps[-1].id),
                                used))
    return WorkflowGraph(ecosystem=eco.name, shape="chain", steps=steps)


def plan_candidates(eco: Ecosystem, n: int, run_seed: int,
                    max_depth: int = 3) -> tuple[list[Candidate], PlanStats]:
    """``n`` candidates with distinct fingerprints (re-planning duplicates, bounded)."""
    seen: set[str] = set()
    out: list[Candidate] = []
    dupes = 0
    for index in range(n):
        for attempt in range(MAX_REPLANS):
            seed = candidate_seed(run_seed, index * 1000 + attempt)
            graph = plan_chain(eco, seed, max_depth)
            fp = graph.fingerprint()
            if fp not in seen:
                break
            dupes += 1
        seen.add(fp)
        cid = hashlib.sha256(f"{eco.digest}:{seed}:{graph.model_dump_json()}".encode())
        out.append(Candidate(candidate_id=cid.hexdigest()[:16], index=index, ecosystem=eco.name,
                             seed=seed, graph=graph))
    return out, PlanStats(planned=len(out), duplicates_replanned=dupes)
