"""Markdown code spans: how instructions mark every literal (inputs, outputs, values).

Instructions render each literal as a code span; the preservation check, the grounding
check and the gate's literal shortcut all read them back with :func:`code_spans`.
"""

from __future__ import annotations

import re

_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def code_spans(text: str) -> list[str]:
    """The contents of the Markdown code spans of ``text``, in order (CommonMark pairing of
    equal backtick runs; one surrounding space is stripped when both ends have one)."""
    spans = []
    for m in _SPAN.finditer(text):
        body = m.group(2)
        if len(body) > 2 and body.startswith(" ") and body.endswith(" ") and body.strip():
            body = body[1:-1]
        spans.append(body)
    return spans
