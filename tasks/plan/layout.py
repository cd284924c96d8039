"""The layout a reconstruct program is written against: the seeded paths its graph reads.

Pure and cheap (the ecosystem's ``layout(seed)`` lists paths without generating files), so
the planner can keep to reconstruct graphs whose layout enough other seeds share
(:func:`layout_seeds`) and the cases stage can start from the same seeds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph

CASES_PUBLIC = 2
"""A reconstruct task's public cases (the agent's examples)."""
CASES_HIDDEN = 3
"""A reconstruct task's hidden cases (only in its verifier)."""
SEED_SCAN = 200
"""Derived seeds tried for cases that lay out the paths the graph reads."""


def with_folders(paths: Iterable[str]) -> set[str]:
    """``paths`` and every folder above them."""
    paths = set(paths)
    return paths | {str(p) for path in paths for p in PurePosixPath(path).parents
                    if str(p) != "."}


def read_paths(eco: Ecosystem, graph: WorkflowGraph, seed: int) -> set[str]:
    """The seeded paths (files or their folders) that the graph's steps bind."""
    values = {str(b.value).rstrip("/") for s in graph.steps for b in s.bind.values()
              if b.kind == "state" and b.value}
    return values & with_folders(eco.state_paths(seed))


def derived_seeds(seed: int) -> Iterator[int]:
    """The other seeds a reconstruct candidate's cases are drawn from, in order (at most
    :data:`SEED_SCAN`, never ``seed``)."""
    for i in range(SEED_SCAN):
        digest = hashlib.sha256(f"taskfactory:case:{seed}:{i}".encode()).digest()
        other = int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
        if other != seed:
            yield other


def layout_seeds(eco: Ecosystem, graph: WorkflowGraph, seed: int) -> Iterator[int]:
    """The derived seeds that lay out every path the graph reads, in order."""
    need = read_paths(eco, graph, seed)
    for other in derived_seeds(seed):
        if need <= with_folders(eco.state_paths(other)):
            yield other


def layout_shared(eco: Ecosystem, graph: WorkflowGraph, seed: int, n: int) -> bool:
    """At least ``n`` derived seeds share the graph's layout."""
    return sum(1 for _ in zip(range(n), layout_seeds(eco, graph, seed), strict=False)) == n
