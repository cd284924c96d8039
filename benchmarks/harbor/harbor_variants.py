"""Variants of exported tasks' solutions, scored by Harbor's own runner.

    .venv/bin/python benchmarks/harbor/harbor_variants.py --data DATA [--n 16]
        [--variants attacks|shared] [--folders DIR] [--concurrency 4]
        [--harbor PATH]   (or TASKFACTORY_HARBOR=PATH)

Exports a sample of the dataset's tasks (spread over the ecosystems), or takes the
folders of ``--folders`` (exported earlier, by any version of taskfactory, from DATA),
then makes a copy of each folder per variant, whose ``solution/solve.sh`` is that variant,
and runs ``harbor run -a oracle`` over the copies: Harbor runs each as the agent user
``task.toml`` names, then the folder's own ``tests/test.sh`` as root, and reads the reward
as it always does.  The variants:

- ``attacks``: each attack of ``tasks.gate.attacks`` that applies to the task, alone (an agent
  that never attempts the task); each must score 0;
- ``shared``: the reference solution, then one entry nobody asked for in each shared
  probe section of the ecosystem (``ProbeSection.extra``), each must score 0; and the
  reference solution, then a work file of the solver's own, which must score 1.

Prints, per variant, how many trials scored as required (and per ecosystem when not);
exits 1 when any did not.  Not part of ``make test``: Harbor needs Python >= 3.12 and a
compose plugin.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harbor_tools import find_harbor, folders_of, harbor_job, parser  # noqa: E402

from tasks.exports.harbor.source import ExportTask, load_ecosystems, load_rows  # noqa: E402
from tasks.gate.attacks import attack_script, attacks_for  # noqa: E402

SCRATCH = "printf 'my own notes\\n' > scratch-notes.txt"


def _attacks(task: ExportTask) -> Iterator[tuple[str, str, float]]:
    controlled = task.controlled
    for attack in attacks_for(controlled):
        yield attack.name, attack_script(controlled, [attack]), 0.0


def _shared(task: ExportTask) -> Iterator[tuple[str, str, float]]:
    """(name, solve.sh, the reward it must get): the reference, then one change."""
    reference = task.row.solution_sh.rstrip() + "\n"
    for name, conf in sorted(task.eco.spec.probe_sections.items()):
        if conf.shared and conf.checked and conf.extra:
            yield f"extra-{name}", f"{reference}{conf.extra[0]}\n", 0.0
    yield "scratch", f"{reference}{SCRATCH}\n", 1.0


VARIANTS = {"attacks": _attacks, "shared": _shared}


def variant_folders(folders: Path, data: Path, eco_dirs: list[Path], out: Path,
                    kind: str) -> dict[str, tuple[str, float]]:
    """A copy of every folder per variant; copy name -> (variant, the reward it needs)."""
    rows = {row.task_id: row for row in load_rows(data, None)}
    names = sorted(p.name for p in folders.iterdir() if (p / "task.toml").is_file())
    picked = [rows[n.rsplit("-", 1)[1]] for n in names]
    ecos = load_ecosystems(picked, eco_dirs, data)
    made: dict[str, tuple[str, float]] = {}
    for name, row in zip(names, picked, strict=True):
        task = ExportTask.of(row, ecos[row.ecosystem, row.ecosystem_version])
        for variant, script, want in VARIANTS[kind](task):
            copy = out / f"{variant}--{name}"
            shutil.copytree(folders / name, copy)
            solve = copy / "solution" / "solve.sh"
            solve.write_text(script)
            solve.chmod(0o755)
            made[copy.name] = (variant, want)
    return made


def main() -> None:
    ap = parser(__doc__, n=16)
    ap.add_argument("--variants", choices=sorted(VARIANTS), default="attacks")
    args = ap.parse_args()
    harbor = find_harbor(args.harbor)
    with tempfile.TemporaryDirectory(prefix="harbor-variants-") as tmp:
        folders = folders_of(args, tmp, args.n)
        copies = Path(tmp) / "variants"
        copies.mkdir()
        made = variant_folders(folders, args.data, args.ecosystem_dir, copies, args.variants)
        seconds, rewards, tail = harbor_job(harbor, copies, "oracle", Path(tmp) / "jobs",
                                            "variants", args.concurrency)
    tally: dict[tuple[str, float], Counter[str]] = defaultdict(Counter)
    for copy, (variant, want) in made.items():
        ecosystem = copy.split("--", 1)[1].rsplit("-", 1)[0]
        reward = rewards.get(copy)
        counts = tally[(variant, want)]
        counts["trials"] += 1
        counts["as required"] += reward == want
        counts["errored"] += reward is None
        if reward is not None and reward != want:
            counts[f"not ({ecosystem})"] += 1
    print(f"harbor run -a oracle over {len(made)} {args.variants} folders ({seconds:.0f} s)")
    for (variant, want), counts in sorted(tally.items()):
        wrong = ", ".join(f"{k[5:-1]} {v}" for k, v in sorted(counts.items())
                          if k.startswith("not ("))
        print(f"  {variant}: {counts['as required']}/{counts['trials']} scored {want:g}"
              + (f" (otherwise: {wrong})" if wrong else "")
              + (f", {counts['errored']} errored" if counts["errored"] else ""))
    if not rewards:
        print(f"  harbor printed: {tail}")
    sys.exit(1 if any(c["as required"] < c["trials"] for c in tally.values()) else 0)


if __name__ == "__main__":
    main()
