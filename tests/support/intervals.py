"""Candidates' busy intervals, read back from a dataset's ``attempts`` table."""

from pathlib import Path

from tasks.dataset.query import run_query


def intervals(data: Path) -> list[tuple[float, float]]:
    """(start, end) of every candidate in seconds since the epoch, sorted by start: an
    attempt is written when its candidate ends (``created_at``), ``total_s`` after it began."""
    _, rows = run_query(data, "select epoch(created_at) - total_s, epoch(created_at) "
                              "from attempts order by 1")
    return [(float(s), float(e)) for s, e in rows]


def most_in_flight(spans: list[tuple[float, float]]) -> int:
    """The most intervals that overlap at any instant (an end sorts before a start)."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most
