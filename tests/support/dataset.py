"""Write candidates' outcomes into a real dataset without a Prefect flow run.

The rows go the way the factory writes them: stamped with provenance by the real
:class:`tasks.dataset.recorder.Recorder` (exact-id dedup only, so that a test keeps every task it
built) and committed as shards by :class:`tasks.dataset.store.writer.ShardWriter` under the
dataset lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tasks.dataset.dedup import DedupIndex
from tasks.dataset.provenance import RunIdentity
from tasks.dataset.recorder import Recorder
from tasks.dataset.store.lock import open_for_writing
from tasks.dataset.store.writer import ShardWriter
from tasks.pipeline import Outcome


def write_outcomes(data: Path, run_id: str, outcomes: Iterable[Outcome],
                   max_rows: int = 500) -> ShardWriter:
    """Commit every outcome's rows into ``data``; returns the closed writer (``written``)."""
    identity = RunIdentity(run_id=run_id, flow_run_id=None, config_hash="test")
    recorder = Recorder(identity, {}, DedupIndex(structure=False, instructions=False))
    with open_for_writing(data) as manifest:
        writer = ShardWriter(data, manifest, run_id, max_rows=max_rows)
        for outcome in outcomes:
            writer.add_group(recorder.record(outcome))
        writer.close()
    return writer
