"""flows.run.heap: free pages pinned between live blocks go back to the OS on release()."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flows.run import heap

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: the test process's arenas already hold free memory from
# earlier tests, which would decide where the blocks below land.
FRAGMENT = """
import json, sys, threading
sys.path.insert(0, sys.argv[1])
from flows.run import heap

def rss_mb():
    with open("/proc/self/status") as f:
        return int(next(ln for ln in f if ln.startswith("VmRSS:")).split()[1]) / 1024

kept = []
def fragment():  # on its own thread: its own glibc arena, like a worker's
    big = []  # non-zero bytes: bytes(n) would be calloc'd pages never touched
    for _ in range(1500):
        big.append(b"\\x01" * 60_000)  # below the mmap threshold: carved from the arena
        kept.append(b"\\x01" * 700)  # a live block after each big one pins the heap
    big.clear()  # ~90 MB now free, but never at the top of the heap

start = rss_mb()
worker = threading.Thread(target=fragment)
worker.start()
worker.join()
freed = rss_mb()
released = heap.release()
print(json.dumps({"start": start, "freed": freed, "released": released, "after": rss_mb()}))
"""


@pytest.mark.skipif(heap._malloc_trim() is None, reason="C library without malloc_trim")
def test_release_returns_free_pages_between_live_blocks():
    out = subprocess.run([sys.executable, "-c", FRAGMENT, str(ROOT)], capture_output=True,
                         text=True, check=True).stdout
    mb = json.loads(out)
    assert mb["freed"] - mb["start"] > 60, f"the freed buffers were not left resident: {mb}"
    assert mb["released"] is True
    assert mb["freed"] - mb["after"] > 50, f"release() left the freed buffers resident: {mb}"


def test_candidate_finished_releases_every_nth(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "release", lambda: calls.append(1) or True)
    for _ in range(3 * heap.EVERY):
        heap.candidate_finished()
    assert len(calls) == 3
