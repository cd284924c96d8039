"""Normalize observations so two runs of the same trace can be compared.

Replaces what legitimately differs between runs — wall-clock timestamps, temporary
paths, process ids, durations — with fixed placeholders.  Applied to both sides of a
comparison only; recorded observations keep their raw text.
"""

from __future__ import annotations

import re

_TIMESTAMP = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_PATTERNS = [
    (re.compile(_TIMESTAMP), "<TS>"),
    (re.compile(r"/tmp/[\w.-]+"), "<TMP>"),
    (re.compile(r"\b(pid|PID)[ =:]?\d+"), r"\1 <PID>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b"), "<DURATION>"),
]


def normalize(text: str) -> str:
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text
