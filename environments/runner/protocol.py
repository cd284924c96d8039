"""Frames spoken between the host and the in-container runner (standard library only).

A frame is an 8-byte header -- big-endian uint32 length of a UTF-8 JSON object, uint32
length of a binary blob -- then the JSON, then the blob. Requests carry ``id`` (an int >
0) and ``op``; each gets exactly one response with the same ``id``. Requests run
concurrently, so responses come in completion order. The runner's first frame is
``{"id": 0, "hello": {"pid", "sid", "python"}}``. After a container's own runner exited,
its shell sends one last frame, ``{"exit": "NNN"}`` (the exit status, three digits).

- ``exec {argv, cwd, env, timeout, cap, stdin: bool}``, blob = stdin bytes ->
  ``{code, timed_out, truncated, out}``, blob = stdout tail (``out`` bytes) + stderr tail.
- ``read {path, max}`` -> ``{}``, blob = the file's bytes; or ``{error, message}``.
- ``write {files: [[path, size], ...]}``, blob = the contents in order -> ``{}`` or
  ``{error, message}``.
- ``snapshot {src, dst}`` copies directory ``src`` to the new ``dst``; ``restore {src,
  dst}`` makes ``dst`` an exact copy of ``src`` again -> ``{}`` or ``{error, message}``.
- ``reset {places: [[path, mode], ...]}`` KILLs the sandbox user's other processes and
  empties ``places`` -> ``{dirty: [what still differs from a fresh container, ...]}``
  (``runner.reset``).
- ``sweep {uid, others, keep, places, logs}`` (the root runner, after a privileged
  command) KILLs what is left of ``uid``'s processes (with ``others``, every non-root
  one's) but the pids in ``keep``, removes what others left in ``places`` and empties and
  reopens the ``logs`` folder -> ``{}`` or ``{error, message}`` (``runner.reset.sweep``).

``error`` is one of ``ERRORS``: ``denied`` and ``isdir`` on a write mean the host should
use the engine's archive calls instead (they run as root and replace directories).
"""

from __future__ import annotations

import json
import struct

TYPE_CHECKING = False  # typing is not imported at run time: the runner starts fast
if TYPE_CHECKING:
    from typing import Any

HEADER = struct.Struct(">II")
ERRORS = ("notfound", "isdir", "notfile", "toolarge", "denied", "failed")


def encode_frame(header: dict[str, Any], blob: bytes = b"") -> bytes:
    body = json.dumps(header, separators=(",", ":")).encode()
    return HEADER.pack(len(body), len(blob)) + body + blob


class FrameReader:
    """Cuts a byte stream into ``(header, blob)`` frames. ``ValueError`` on a frame larger
    than ``limit`` bytes or a header that is not a JSON object."""

    def __init__(self, limit: int = 1 << 40) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[dict[str, Any], bytes]]:
        self._buf += data
        frames = []
        while len(self._buf) >= HEADER.size:
            n_json, n_blob = HEADER.unpack_from(self._buf)
            if n_json + n_blob > self.limit:
                raise ValueError(f"frame of {n_json + n_blob} bytes > limit {self.limit}")
            end = HEADER.size + n_json + n_blob
            if len(self._buf) < end:
                break
            header = json.loads(bytes(self._buf[HEADER.size : HEADER.size + n_json]))
            if not isinstance(header, dict):
                raise ValueError("frame header is not a JSON object")
            frames.append((header, bytes(self._buf[HEADER.size + n_json : end])))
            del self._buf[:end]
        return frames
