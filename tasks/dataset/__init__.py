"""The dataset: a folder of zstd Parquet shards with a manifest, behind :class:`Dataset`.

What each module owns, from the bottom up:

- ``manifest``: the commit log (``_manifest.json``), its models and atomic saves;
- ``commits``: shard names, the commit record every shard carries, commit groups, and
  whether the manifest accounts for the shards on disk; ``checksums``: sha256 verdicts;
- ``lock``: the one-writer lock and the checks every writer makes before it writes;
- ``writer``: the shard writer (a candidate's rows are committed together or not at all);
- ``dedup``, ``provenance``, ``recorder``: from a candidate's outcome to stamped rows;
- ``runs``, ``run_writer``: run bookkeeping, and the context a factory run writes through;
- ``query``: the read-only DuckDB over verified shards; ``dataset``: the :class:`Dataset`;
- ``stats``, ``stats_instructions``, ``card``, ``sft``: reports, the card, the SFT export;
- ``repair``, ``vacuum``: rebuilding a manifest and quarantining, the only deletion.

Nothing here imports Prefect, Docker or ``flows/``.
"""

from tasks.dataset.dataset import Dataset
from tasks.dataset.query import QueryError, ReadOnlyError
from tasks.dataset.store.manifest import DatasetError

__all__ = ["Dataset", "DatasetError", "QueryError", "ReadOnlyError"]
