"""Probe for the ``files`` ecosystem: prints the workspace state as canonical JSON.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the workspace directory.  Output: ``{"files": {path: entry}}`` where the entry is the text
of a UTF-8 file up to 256 KiB, else ``{"sha256": ..., "size": ...}`` (``{"symlink": ...}``
for links).
"""

import contextlib
import hashlib
import json
import os

MAX_TEXT = 256 * 1024


def main() -> None:
    files = {}
    for root, dirs, names in os.walk("."):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)[2:]
            if os.path.islink(path):
                files[path] = {"symlink": os.readlink(path)}
                continue
            with open(path, "rb") as f:
                data = f.read()
            entry = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            if len(data) <= MAX_TEXT:
                with contextlib.suppress(UnicodeDecodeError):
                    entry = data.decode("utf-8")
            files[path] = entry
    print(json.dumps({"files": files}, sort_keys=True, separators=(",", ":")))


main()
