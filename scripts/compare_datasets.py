"""Compare two datasets row by row: do two runs of the same seed write the same data?

    .venv/bin/python scripts/compare_datasets.py DATA_A DATA_B

For ``tasks``, ``trajectories``, ``steps`` and ``attempts``, every column is compared
except those that record when, where and by which build a row was written: ``provenance``,
``run_id``, ``created_at``, ``generator_version``, the attempt's phase timings and the
steps' and traces' durations.  Text is compared after :func:`tasks.execute.normalize.normalize`
(what the gate's determinism replay masks) and with commit ids and git dates masked: a
git tool's commit gets the wall-clock time, so its id differs between runs.  Rows are
matched by their key (task id, trajectory id, task id + step position, candidate id).
Prints one line per table and the first differences; exits 1 when any table differs.
Used to show that a refactoring left the pipeline's output unchanged.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.dataset.query import connect  # noqa: E402
from tasks.execute.normalize import normalize  # noqa: E402

KEYS = {"tasks": ("task_id",), "trajectories": ("trajectory_id",),
        "steps": ("task_id", "position"), "attempts": ("candidate_id",)}
IGNORED = {"provenance", "run_id", "created_at", "generator_version", "sandbox_s",
           "execute_s", "gate_s", "render_s", "total_s", "duration_s"}
"""When, where and by which build a row was written; how long its phases took."""


_COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
_GIT_DATE = re.compile(r"\b\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4} [+-]\d{4}")


def _masked(value: object) -> object:
    """``value`` with durations dropped and run-dependent text masked, at any depth."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items() if k != "duration_s"}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    if isinstance(value, str):
        return _GIT_DATE.sub("<DATE>", _COMMIT.sub("<COMMIT>", normalize(value)))
    return value


def _normal(column: str, value: object) -> object:
    """JSON columns compared as parsed values (a trace holds each step's observation)."""
    if column.endswith("_json") and isinstance(value, str):
        value = json.loads(value)
    return _masked(value)


def rows(data: Path, table: str) -> dict[tuple, dict]:
    con = connect(data)
    try:
        cur = con.execute(f"select * from {table}")
        columns = [d[0] for d in cur.description]
        out = {}
        for values in cur.fetchall():
            raw = dict(zip(columns, values, strict=True))
            out[tuple(raw[k] for k in KEYS[table])] = {
                c: _normal(c, v) for c, v in raw.items() if c not in IGNORED}
        return out
    finally:
        con.close()


def compare(a: Path, b: Path) -> list[str]:
    """One line per table, then up to five differences per table that differs."""
    report = []
    for table in KEYS:
        ra, rb = rows(a, table), rows(b, table)
        problems = [f"  only in {a}: {k}" for k in sorted(ra.keys() - rb.keys(), key=str)]
        problems += [f"  only in {b}: {k}" for k in sorted(rb.keys() - ra.keys(), key=str)]
        for key in sorted(ra.keys() & rb.keys(), key=str):
            columns = [c for c in ra[key] if ra[key][c] != rb[key].get(c)]
            if columns:
                problems.append(f"  {key}: {', '.join(columns)} differ")
        verdict = "identical" if not problems else f"{len(problems)} differences"
        report.append(f"{table}: {len(ra)} vs {len(rb)} rows, {verdict}")
        report += problems[:5]
    return report


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    lines = compare(Path(sys.argv[1]), Path(sys.argv[2]))
    print("\n".join(lines))
    return 0 if all(" identical" in ln for ln in lines if not ln.startswith(" ")) else 1


if __name__ == "__main__":
    sys.exit(main())
