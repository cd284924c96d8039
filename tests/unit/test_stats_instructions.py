"""`taskfactory stats` on shards written before instruction columns existed."""

import pyarrow as pa
import pyarrow.parquet as pq

from flows.query import connect
from flows.stats_instructions import instruction_stats, opening


def test_older_shards_are_reported_not_rechecked(tmp_path):
    (tmp_path / "tasks").mkdir()
    pq.write_table(pa.table({"task_id": ["a", "b"], "ecosystem": ["files", "files"],
                             "instruction": ["Do `x` now.\n", "Do `y` now.\n"]}),
                   tmp_path / "tasks" / "part-old.parquet")
    stats = instruction_stats(connect(tmp_path))
    assert (stats.tasks, stats.distinct, stats.templates) == (2, 2, 0)
    assert [(o.value, o.count) for o in stats.openings] == [("Do `x` now.", 1),
                                                            ("Do `y` now.", 1)]
    (eco,) = stats.ecosystems
    assert (eco.tasks, eco.preserved, eco.trajectories) == (2, 0, 0)


def test_opening_is_the_first_words_of_the_first_line():
    assert opening("\n\nPrepare the following outputs:\n\n- `a`: b.") == \
        "Prepare the following outputs:"
    assert opening("One two three four five six") == "One two three four five"
