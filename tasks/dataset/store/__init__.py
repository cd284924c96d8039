"""The dataset folder as storage: shards, the manifest, the writer lock, repair.

- ``manifest``: the commit log (``_manifest.json``), its models and atomic saves;
- ``commits``: shard names, the commit record each shard carries, commit groups;
- ``checksums``: every listed shard's sha256, checked before it is read;
- ``lock``: the one-writer lock and the checks a writer makes before it writes;
- ``writer``: :class:`~tasks.dataset.store.writer.ShardWriter` (a candidate's rows are
  committed together or not at all);
- ``folder``, ``paths``, ``errors``: what makes a folder a dataset, which paths inside
  it are the factory's, the one-line errors;
- ``snapshots``: the user ecosystem folders runs used, kept under ``ecosystems/``;
- ``repair``, ``vacuum``: rebuilding a manifest and quarantining, the only deletion.

Imports nothing of ``tasks/`` outside :mod:`tasks.dataset`.
"""

__all__ = ["checksums", "commits", "errors", "folder", "lock", "manifest", "paths",
           "repair", "snapshots", "vacuum", "writer"]
