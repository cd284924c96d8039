"""flows.heap: free pages pinned between live blocks go back to the OS on release()."""

from __future__ import annotations

import threading

import pytest

from flows import heap


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(heap._malloc_trim() is None, reason="C library without malloc_trim")
def test_release_returns_free_pages_between_live_blocks():
    kept: list[bytes] = []

    def fragment() -> None:  # on its own thread: its own glibc arena, like a worker's
        big = []  # non-zero bytes: bytes(n) would be calloc'd pages never touched
        for _ in range(1500):
            big.append(b"\x01" * 60_000)  # below the mmap threshold: carved from the arena
            kept.append(b"\x01" * 700)  # a live block after each big one pins the heap
        big.clear()  # ~90 MB now free, but never at the top of the heap

    worker = threading.Thread(target=fragment)
    worker.start()
    worker.join()
    before = _rss_mb()
    assert heap.release() is True
    assert before - _rss_mb() > 50, "the freed buffers stayed resident after release()"
    assert len(kept) == 1500


def test_candidate_finished_releases_every_nth(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "release", lambda: calls.append(1) or True)
    for _ in range(3 * heap.EVERY):
        heap.candidate_finished()
    assert len(calls) == 3
