"""Exported tasks against the real Harbor: ``harbor lint`` and ``harbor run -a oracle|nop``.

    .venv/bin/python benchmarks/harbor/harbor_crosscheck.py --data DATA [--n 40 | --all]
        [--concurrency 4] [--harbor PATH]      (or TASKFACTORY_HARBOR=PATH)
        [--folders DIR]                         (already exported folders of DATA)

Exports a sample of the dataset's tasks (spread over the ecosystems; every task with
``--all``), or takes the folders of ``--folders``, then:

1. ``harbor lint`` with its default rules: every finding must be of a waived rule
   (``shared-verifier``, see docs/exports.md, "Harbor export");
2. ``harbor run -a oracle`` (docker environment): every task must score 1;
3. ``harbor run -a nop``: every task must score 0.

Prints counts per ecosystem and every task that did not score as required; exits 1 then.
Not part of ``make test``: Harbor needs Python >= 3.12 and a compose plugin, which the
test set-up does not install.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harbor_tools import (  # noqa: E402
    find_harbor,
    folders_of,
    harbor_job,
    harbor_lint,
    parser,
)

WAIVED = {"shared-verifier"}


def main() -> None:
    ap = parser(__doc__, n=40)
    ap.add_argument("--all", action="store_true", help="every task of the dataset")
    args = ap.parse_args()
    harbor = find_harbor(args.harbor)
    with tempfile.TemporaryDirectory(prefix="harbor-crosscheck-") as tmp:
        folders = folders_of(args, tmp, 10**9 if args.all else args.n)
        names = sorted(p.name for p in folders.iterdir() if (p / "task.toml").is_file())
        ecosystem = {n: n.rsplit("-", 1)[0] for n in names}
        findings = harbor_lint(harbor, [folders / n for n in names])
        rules = Counter(f["rule"] for f in findings)
        print(f"harbor lint over {len(names)} folders: "
              + (", ".join(f"{r} x{c}" for r, c in sorted(rules.items())) or "no findings"))
        bad = [f for f in findings if f["rule"] not in WAIVED]
        for f in bad[:20]:
            print(f"  lint: {f['path']}:{f.get('line') or ''} [{f['rule']}] {f['message']}")
        results = {}
        for agent, want in (("oracle", 1), ("nop", 0)):
            seconds, rewards, tail = harbor_job(harbor, folders, agent, Path(tmp) / "jobs",
                                                agent, args.concurrency)
            results[agent] = (want, rewards)
            passed = Counter(ecosystem[n] for n in names if rewards.get(n) == want)
            total = Counter(ecosystem.values())
            print(f"harbor run -a {agent}: "
                  + ", ".join(f"{e} {passed[e]}/{total[e]}" for e in sorted(total))
                  + f" scored {want} ({seconds:.0f} s)")
            if not rewards:
                print(f"  harbor printed: {tail}")
    wrong = [f"{agent} {n}: {rewards.get(n)}" for agent, (want, rewards) in results.items()
             for n in names if rewards.get(n) != want]
    for w in wrong[:50]:
        print(f"  did not score as required: {w}")
    sys.exit(1 if wrong or bad else 0)


if __name__ == "__main__":
    main()
