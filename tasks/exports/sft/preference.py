"""Write a preference export: DPO-style JSONL pairs of a successful and a failed rollout of
the same task (:mod:`tasks.exports.sft.rollout_rows` says which pairs).

Rows stream from DuckDB into a temporary file next to ``--out``, renamed into place when
every pair is written; no pairs is an :class:`ExportError` and leaves no file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tasks.dataset.dataset import Dataset
from tasks.exports.sft import ExportError
from tasks.exports.sft.export import _Staged, task_filter
from tasks.exports.sft.rollout_rows import OWN_ATTEMPTS, PAIR_COLUMNS, dpo_record, preference_pairs


def export_preference(data: Path, out: Path, action_space: str = "terminal",
                      where: str | None = None) -> int:
    """Write the pairs; returns how many.  ExportError (or DatasetError) before anything is
    written when the input is bad or no task has both a success and a failure."""
    dataset = Dataset.open(data)
    if out.is_dir():
        raise ExportError(f"--out {out} is a folder; give a file path such as "
                          f"{out}/preference.jsonl")
    condition, params = task_filter(dataset, where)
    rows = [dict(zip(PAIR_COLUMNS, r, strict=True)) for r in dataset.rows(
        f"select {', '.join(PAIR_COLUMNS)} from rollouts where action_space = ? and "
        f"{OWN_ATTEMPTS}{condition}",
        [action_space, *params])]
    for row in rows:
        row["tools"] = json.loads(row["tools"])
    pairs = preference_pairs(rows)
    if not pairs:
        raise ExportError(f"no task in {data} has both a solved and a failed {action_space} "
                          "rollout; run `taskfactory solve` with a larger --k, or look with "
                          "`taskfactory query \"select * from difficulty\"`")
    staged = _Staged()
    try:
        with staged.open(out) as f:
            for chosen, rejected in pairs:
                f.write(json.dumps(dpo_record(chosen, rejected), ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        staged.commit()
    finally:
        staged.discard()
    return len(pairs)
