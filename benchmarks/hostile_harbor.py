"""The hostile control's attacks as Harbor agents, scored by Harbor's own runner.

    .venv/bin/python benchmarks/hostile_harbor.py --data DATA [--n 16]
        [--folders DIR] [--concurrency 4] [--harbor PATH]   (or TASKFACTORY_HARBOR=PATH)

Exports a sample of the dataset's tasks (spread over the ecosystems), or takes the
folders of ``--folders`` (exported earlier, by any version of taskfactory, from DATA),
then for each folder and each attack of ``tasks.attacks`` that applies to its task makes a
copy whose ``solution/solve.sh`` is that attack alone, and runs ``harbor run -a oracle``
over the copies: Harbor runs each attack as the agent user ``task.toml`` names, then the
folder's own ``tests/test.sh`` as root, and reads the reward as it always does.  Prints,
per attack, how many trials scored 1 (each must score 0) and per ecosystem; exits 1 when
any scored.  Not part of ``make test``: Harbor needs Python >= 3.12 and a compose plugin.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harbor_tools import find_harbor, folders_of, harbor_job, parser  # noqa: E402

from tasks.attacks import attack_script, attacks_for  # noqa: E402
from tasks.harbor.source import ExportTask, load_ecosystems, load_rows  # noqa: E402


def attack_folders(folders: Path, data: Path, eco_dirs: list[Path], out: Path) -> dict[str, str]:
    """A copy of every folder per attack that applies to its task; copy name -> attack."""
    rows = {row.task_id: row for row in load_rows(data, None)}
    names = sorted(p.name for p in folders.iterdir() if (p / "task.toml").is_file())
    picked = [rows[n.rsplit("-", 1)[1]] for n in names]
    ecos = load_ecosystems({r.ecosystem for r in picked}, eco_dirs)
    made: dict[str, str] = {}
    for name, row in zip(names, picked, strict=True):
        task = ExportTask.of(row, ecos[row.ecosystem]).controlled
        for attack in attacks_for(task):
            copy = out / f"{attack.name}--{name}"
            shutil.copytree(folders / name, copy)
            solve = copy / "solution" / "solve.sh"
            solve.write_text(attack_script(task, [attack]))
            solve.chmod(0o755)
            made[copy.name] = attack.name
    return made


def main() -> None:
    args = parser(__doc__, n=16).parse_args()
    harbor = find_harbor(args.harbor)
    with tempfile.TemporaryDirectory(prefix="hostile-harbor-") as tmp:
        folders = folders_of(args, tmp, args.n)
        copies = Path(tmp) / "attacks"
        copies.mkdir()
        made = attack_folders(folders, args.data, args.ecosystem_dir, copies)
        seconds, rewards, tail = harbor_job(harbor, copies, "oracle", Path(tmp) / "jobs",
                                            "attacks", args.concurrency)
    took: dict[str, Counter[str]] = defaultdict(Counter)
    for copy, attack in made.items():
        ecosystem = copy.split("--", 1)[1].rsplit("-", 1)[0]
        reward = rewards.get(copy)
        took[attack]["trials"] += 1
        took[attack]["scored 1"] += reward == 1
        took[attack]["errored"] += reward is None
        took[attack][f"scored 1 ({ecosystem})"] += reward == 1
    print(f"harbor run -a oracle over {len(made)} attack folders ({seconds:.0f} s)")
    for attack, counts in sorted(took.items()):
        per_eco = ", ".join(f"{k[10:-1]} {v}" for k, v in sorted(counts.items())
                            if k.startswith("scored 1 (") and v)
        print(f"  {attack}: {counts['scored 1']}/{counts['trials']} scored 1"
              + (f" ({per_eco})" if per_eco else "")
              + (f", {counts['errored']} errored" if counts["errored"] else ""))
    if not rewards:
        print(f"  harbor printed: {tail}")
    sys.exit(1 if any(c["scored 1"] for c in took.values()) else 0)


if __name__ == "__main__":
    main()
