"""What verifying every listed shard's sha256 costs a reader that opens a dataset.

    .venv/bin/python benchmarks/shard_checks.py --data DIR [--repeat 5] [--scale N]

For the dataset at DIR (build a realistic one first, e.g. ``taskfactory run --tasks 240
--seed 5 --data DIR``): the bytes the manifest lists; the time to hash all of them in one
thread and in the readers' thread pool (files in the page cache: the CPU cost; a cold
disk adds its read time); and ``taskfactory query "select count(*) from tasks"`` end to
end in a fresh process, which hashes everything once (the verdicts are cached per
process).  Medians of ``--repeat`` rounds.  ``--scale N`` measures a dataset N times as
large: every shard copied N times under new names and listed (hashing costs per byte,
so copies cost what new shards would).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.dataset.store.checksums import HASH_THREADS, sha256_of  # noqa: E402
from tasks.dataset.store.manifest import Manifest, load_manifest, save_manifest  # noqa: E402


def _scaled(data: Path, n: int, into: Path) -> Path:
    """A dataset of ``n`` copies of every shard of ``data``, all listed."""
    manifest, out = load_manifest(data), Manifest()
    for k in range(n):
        for s in manifest.shards:
            path = Path(s.path)
            rel = str(path.with_name(f"copy{k}-{path.name}"))
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data / s.path, into / rel)
            out.shards.append(s.model_copy(update={"path": rel}))
    save_manifest(into, out)
    return into


def _hash_all(paths: list[Path], threads: int) -> float:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda p: sha256_of(p.parent, p.name), paths))
    return time.perf_counter() - t0


def _query(data: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "flows.cli", "query", "select count(*) from tasks",
                    "--data", str(data)], check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data if args.scale == 1 else _scaled(args.data, args.scale, Path(tmp))
        measure(data, args.repeat)


def measure(data: Path, repeat: int) -> None:
    manifest = load_manifest(data)
    paths = [data / s.path for s in manifest.shards]
    mb = sum(p.stat().st_size for p in paths) / 1e6
    _hash_all(paths, 1)  # into the page cache
    counts = sorted({1, 2, HASH_THREADS})
    times: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(repeat):  # interleaved, so drift in the machine's speed hits all alike
        for n in counts:
            times[n].append(_hash_all(paths, n))
    query = statistics.median(_query(data) for _ in range(repeat))
    print(f"{len(paths)} shards, {mb:.1f} MB listed")
    one = statistics.median(times[1])
    for n in counts:
        t = statistics.median(times[n])
        print(f"sha256 of every shard, {n} thread(s): {t * 1000:7.1f} ms "
              f"({t * 1000 / mb:.2f} ms/MB, {one / t:.2f}x one thread)")
    print(f"taskfactory query in a fresh process (hashes all once): {query * 1000:.0f} ms")


if __name__ == "__main__":
    main()
