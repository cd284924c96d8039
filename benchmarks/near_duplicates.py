"""How the near-duplicate instruction threshold behaves on the instructions of a real dataset.

    .venv/bin/python benchmarks/near_duplicates.py --data data

For every pair of distinct tasks of one ecosystem it computes the exact Jaccard
similarity over word 3-grams (the signal ``tasks.dataset.dedup`` estimates with MinHash) and
prints, per threshold, how many tasks would be rejected.  Distinct tasks ask for
different things, so every rejection among them is a false positive.  As true near
duplicates it re-words each instruction the way the renderer varies phrasing (another
opening and closing sentence, same items) and reports the share the MinHash index
catches: the recall.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.dataset.dedup import THRESHOLD, DedupIndex, shingles  # noqa: E402
from tasks.dataset.query import run_query  # noqa: E402
from tasks.instruct.instruction import PHRASES  # noqa: E402

OPENERS = [t for style in ("goal", "step") for group in PHRASES[style]["openers"].values()
           for t in group.values()]
CLOSERS = [t for style in ("goal", "step") for t in PHRASES[style]["closers"].values()]

THRESHOLDS = [0.6, 0.7, 0.8, 0.85, 0.9, 0.95]


def reworded(text: str) -> str:
    """The same items under another opening and closing sentence."""
    for i, opener in enumerate(OPENERS):
        if opener in text:
            text = text.replace(opener, OPENERS[(i + 1) % len(OPENERS)])
            break
    for i, closer in enumerate(CLOSERS):
        if closer in text:
            return text.replace(closer, CLOSERS[(i + 1) % len(CLOSERS)])
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("data"))
    args = ap.parse_args()
    _, rows = run_query(args.data, "select task_id, ecosystem, instruction from tasks "
                                   "order by task_id")
    by_eco = collections.defaultdict(list)
    for task_id, eco, text in rows:
        by_eco[eco].append((task_id, shingles(text)))
    nearest: dict[str, float] = {}
    for items in by_eco.values():
        for (a, sa), (b, sb) in itertools.combinations(items, 2):
            j = len(sa & sb) / len(sa | sb)
            nearest[a] = max(nearest.get(a, 0.0), j)
            nearest[b] = max(nearest.get(b, 0.0), j)
    sims = sorted(nearest.values())
    q = lambda p: sims[int(p * (len(sims) - 1))]  # noqa: E731
    print(f"{len(rows)} real instructions in {len(by_eco)} ecosystems; similarity of each to "
          f"its nearest other task: median {statistics.median(sims):.3f}, p90 {q(0.9):.3f}, "
          f"p99 {q(0.99):.3f}, max {sims[-1]:.3f}")
    print("threshold  distinct tasks that would be rejected (false positives)")
    for t in THRESHOLDS:
        n = sum(s >= t for s in sims)
        print(f"  {t:<8} {n:>5}  ({100 * n / len(sims):.1f}%)")
    index = DedupIndex(structure=False)
    false_pos = 0
    for task_id, _, text in rows:
        false_pos += index.check(task_id, "", text) is not None
        index.add(task_id, "", text)
    caught = sum(index.check("re-" + tid, "", reworded(text)) is not None
                 for tid, _, text in rows)
    print(f"MinHash index at {THRESHOLD}: {false_pos} of {len(rows)} distinct tasks rejected; "
          f"{caught} of {len(rows)} re-worded copies caught ({100 * caught / len(rows):.1f}% "
          "recall)")


if __name__ == "__main__":
    main()
