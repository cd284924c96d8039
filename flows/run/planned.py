"""A run's planned candidates, held as compact JSON until each one is submitted.

A run plans every candidate before the first one runs (the ids decide what a resumed or
repeated run skips).  As pydantic objects a candidate costs ~17 KB of heap (its graph,
steps and bindings); as JSON it is ~2 KB.  Holding the JSON keeps a 2,000-candidate
plan at ~4 MB instead of ~35 MB, and a candidate is decoded only when it is submitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from schemas.graph import Candidate


class PlannedCandidates:
    """Candidates in submission order; iterating decodes them one at a time."""

    def __init__(self, candidates: Iterable[Candidate] = ()) -> None:
        self._ids: list[str] = []
        self._json: list[bytes] = []
        for c in candidates:
            self.append(c)

    def append(self, candidate: Candidate) -> None:
        self._ids.append(candidate.candidate_id)
        self._json.append(candidate.model_dump_json().encode())

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[Candidate]:
        return (Candidate.model_validate_json(blob) for blob in self._json)

    def without(self, ids: set[str], keep: Iterable[str] | None = None) -> PlannedCandidates:
        """The candidates whose id is not in ``ids`` (and is in ``keep``, unless that is
        None), still encoded."""
        kept = None if keep is None else set(keep)
        out = PlannedCandidates()
        for cid, blob in zip(self._ids, self._json, strict=True):
            if cid not in ids and (kept is None or cid in kept):
                out._ids.append(cid)
                out._json.append(blob)
        return out
