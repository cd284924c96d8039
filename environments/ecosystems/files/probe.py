"""Probe for the ``files`` ecosystem: prints the workspace state as canonical JSON.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the workspace directory, and inside the verifier (as root, on what the agent left).
Output: ``{"files": {path: entry}}`` for every file under the workspace, hidden ones too:
the text of a UTF-8 file up to 256 KiB, else ``{"sha256": ..., "size": ...}``;
``{"symlink": target}`` for a link, to a file or a directory (never followed);
``{"special": "fifo"}`` (or socket, device), ``{"unreadable": errno}``, ``{"oversize":
size}`` for what is not read (``file_entry.py``, joined in front, says why).
"""

import json

TYPE_CHECKING = False  # not typing's: importing typing costs more than a probe's work
if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import workspace_entries


def main() -> None:
    print(json.dumps({"files": workspace_entries()}, sort_keys=True, separators=(",", ":")))


main()
