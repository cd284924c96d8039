"""Dedup across the runs of one dataset, decided before a task's rows are written.

Three signals, checked in this order (the first that matches names the reason):

- ``duplicate_task``: the content-addressed ``task_id`` is already in the dataset;
- ``duplicate_structure``: an accepted task has the same workflow fingerprint (shape +
  tool multiset + binding pattern; the planner already avoids these within a run);
- ``near_duplicate_instruction``: an accepted instruction has an estimated Jaccard
  similarity >= ``threshold`` over word ``SHINGLE``-grams of its **requirement lines**
  (MinHash with ``NUM_PERM`` permutations, candidates found with LSH; datasketch).  The
  requirement lines are the instruction's list items (the whole text when it has none):
  the surrounding sentences are boilerplate the renderer varies (context, opening,
  closing), which would otherwise hide re-worded duplicates and make distinct tasks of one
  ecosystem look alike.

The threshold (0.9) was chosen on real instructions: see ``benchmarks/README.md``
(near-duplicate threshold) for the measured similarity distribution and false positives.
Decisions depend only on what was indexed before, so feeding tasks in a fixed order gives
the same decisions on every run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

THRESHOLD = 0.9
SHINGLE = 3
NUM_PERM = 128
_WORD = re.compile(r"\S+")


def requirements(text: str) -> str:
    """The list items of an instruction (``- ...`` lines), or the whole text if none."""
    items = [line for line in text.splitlines() if line.lstrip().startswith(("- ", "* "))]
    return "\n".join(items) if items else text


def shingles(text: str, n: int = SHINGLE) -> set[bytes]:
    """Lower-cased word ``n``-grams of ``text``'s requirement lines (all of them when there
    are fewer than ``n`` words)."""
    words = _WORD.findall(requirements(text).lower())
    if len(words) < n:
        return {" ".join(words).encode()}
    return {" ".join(words[i:i + n]).encode() for i in range(len(words) - n + 1)}


def minhash(text: str):
    from datasketch import LeanMinHash, MinHash

    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch(list(shingles(text)))
    return LeanMinHash(m)


@dataclass(frozen=True)
class Duplicate:
    reason: str
    of_task: str
    """The task already in the dataset that this one duplicates."""
    similarity: float = 1.0

    @property
    def detail(self) -> str:
        what = {"duplicate_task": "the same task id as",
                "duplicate_structure": "the same workflow fingerprint as",
                "near_duplicate_instruction": f"instruction similarity {self.similarity:.2f} "
                                              "with"}[self.reason]
        return f"{what} task {self.of_task}"


@dataclass
class DedupIndex:
    """What the dataset already holds: task ids, fingerprints and instruction MinHashes."""

    threshold: float = THRESHOLD
    structure: bool = True
    instructions: bool = True
    task_ids: set[str] = field(default_factory=set)
    fingerprints: dict[str, str] = field(default_factory=dict)
    _hashes: dict[str, Any] = field(default_factory=dict)
    _lsh: Any = None

    def __post_init__(self) -> None:
        from datasketch import MinHashLSH

        self._lsh = MinHashLSH(threshold=self.threshold, num_perm=NUM_PERM)

    def check(self, task_id: str, fingerprint: str, instruction: str) -> Duplicate | None:
        """The first duplicate signal ``task_id`` matches, or None (nothing is indexed)."""
        if task_id in self.task_ids:
            return Duplicate("duplicate_task", task_id)
        if self.structure and fingerprint in self.fingerprints:
            return Duplicate("duplicate_structure", self.fingerprints[fingerprint])
        if self.instructions:
            m = minhash(instruction)
            best = max(((m.jaccard(self._hashes[k]), k) for k in self._lsh.query(m)),
                       default=None, key=lambda sk: (sk[0], sk[1]))
            if best and best[0] >= self.threshold:
                return Duplicate("near_duplicate_instruction", best[1], best[0])
        return None

    def add(self, task_id: str, fingerprint: str, instruction: str) -> None:
        if task_id in self.task_ids:
            return
        self.task_ids.add(task_id)
        self.fingerprints.setdefault(fingerprint, task_id)
        if self.instructions:
            m = minhash(instruction)
            self._hashes[task_id] = m
            self._lsh.insert(task_id, m)

    def add_all(self, rows: Iterable[tuple[str, str, str]]) -> DedupIndex:
        """Index (task_id, fingerprint, instruction) rows in the given order."""
        for task_id, fingerprint, instruction in rows:
            self.add(task_id, fingerprint, instruction)
        return self

    @property
    def policy(self) -> str:
        """What this index rejects, for the config hash."""
        return (f"task,structure={self.structure},instructions={self.instructions}"
                f"@{self.threshold}/{SHINGLE}/{NUM_PERM}")
