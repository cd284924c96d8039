"""Probe for the ``files`` ecosystem: prints the workspace state as canonical JSON.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the workspace directory.  Output: ``{"files": {path: entry}}`` where the entry is the text
of a UTF-8 file up to 256 KiB, else ``{"sha256": ..., "size": ...}`` (``{"symlink": ...}``
for links).
"""

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import file_entry


def main() -> None:
    files = {}
    for root, dirs, names in os.walk("."):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)[2:]
            if os.path.islink(path):
                files[path] = {"symlink": os.readlink(path)}
                continue
            files[path] = file_entry(path)
    print(json.dumps({"files": files}, sort_keys=True, separators=(",", ":")))


main()
