"""Probe part: how one workspace file is recorded, shared by the files and sql probes.

Standard library only.  It is joined in front of a probe script (``probe`` in
ecosystem.yaml lists the parts), so the script after it calls ``file_entry`` directly.
"""

import contextlib
import hashlib

MAX_TEXT = 256 * 1024


def file_entry(path):
    """The file's text when it is UTF-8 and at most 256 KiB, else ``{"sha256", "size"}``."""
    with open(path, "rb") as f:
        data = f.read()
    entry = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    if len(data) <= MAX_TEXT:
        with contextlib.suppress(UnicodeDecodeError):
            entry = data.decode("utf-8")
    return entry
