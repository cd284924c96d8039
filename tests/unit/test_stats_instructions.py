"""`taskfactory stats` on shards written before instruction columns existed."""

from pathlib import Path

from tasks.dataset.query import connect
from tasks.dataset.report.instructions import instruction_stats, opening

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"


def test_older_shards_are_reported_not_rechecked():
    """A version-1 dataset (tests/fixtures/datasets/v1) has no template ids or literals."""
    stats = instruction_stats(connect(V1))
    assert (stats.tasks, stats.distinct, stats.templates) == (6, 6, 0)
    assert sum(o.count for o in stats.openings) == 6
    (eco,) = stats.ecosystems
    assert (eco.ecosystem, eco.tasks, eco.preserved) == ("files", 6, 0)  # nothing to re-check
    assert eco.trajectories == 6


def test_opening_is_the_first_words_of_the_first_line():
    assert opening("\n\nPrepare the following outputs:\n\n- `a`: b.") == \
        "Prepare the following outputs:"
    assert opening("One two three four five six") == "One two three four five"
