"""The dataset: a folder of zstd Parquet shards with a manifest, behind :class:`Dataset`.

What each module owns, from the bottom up:

- ``store/``: the folder as storage — manifest, commits, checksums, the writer lock, the
  shard writer, repair and vacuum (:mod:`tasks.dataset.store`);
- ``dedup``, ``provenance``, ``recorder``, ``difficulty``: from a candidate's outcome to
  stamped rows;
- ``runs``, ``run_writer``, ``interrupts``: run bookkeeping, and the context a factory run
  writes through;
- ``query``, ``query_bounds``: the read-only DuckDB over verified shards, and its bounds;
- ``dataset``: the :class:`Dataset`; ``report/``: ``taskfactory stats`` and the card.

Nothing here imports Prefect, Docker or ``flows/``.
"""

from tasks.dataset.dataset import Dataset
from tasks.dataset.query import QueryError, ReadOnlyError
from tasks.dataset.store.manifest import DatasetError

__all__ = ["Dataset", "DatasetError", "QueryError", "ReadOnlyError", "dataset", "dedup",
           "interrupts", "provenance", "query", "query_bounds", "report", "run_writer", "runs",
           "store"]
