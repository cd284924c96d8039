"""How a verifier compares probe entries: the compare modes, and digests of entries that
must stay unchanged.

Standard library only, and no ``from __future__`` import: the rendered verifier embeds
this file's source (``tasks/templates/verifier.py.j2``), and the factory imports it to
compute the digests the verifier later recomputes, so both sides use one implementation.
"""

import collections
import contextlib
import csv
import hashlib
import io
import json


def norm_lines(text):
    """Lines without trailing whitespace or trailing empty lines (``\\r\\n`` as ``\\n``)."""
    lines = [line.rstrip() for line in str(text).replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def csv_rows(text):
    return [row for row in csv.reader(io.StringIO(text)) if row]


def canon(value):
    return json.dumps(value, sort_keys=True)


COMPARE = {
    "exact": lambda got, want: got == want,
    "text": lambda got, want: norm_lines(got) == norm_lines(want),
    "lines_unordered": lambda got, want: (collections.Counter(norm_lines(got))
                                          == collections.Counter(norm_lines(want))),
    "csv": lambda got, want: csv_rows(got) == csv_rows(want),
    "csv_unordered": lambda got, want: (
        csv_rows(got)[:1] == csv_rows(want)[:1]
        and sorted(csv_rows(got)[1:]) == sorted(csv_rows(want)[1:])),
    "json_text": lambda got, want: json.loads(got) == json.loads(want),
    "rows_unordered": lambda got, want: sorted(map(canon, got)) == sorted(map(canon, want)),
}
"""Compare mode -> equal(got, want)."""

CANONICAL = {
    "exact": lambda value: value,
    "text": norm_lines,
    "lines_unordered": lambda value: sorted(norm_lines(value)),
    "csv": csv_rows,
    "csv_unordered": lambda value: csv_rows(value)[:1] + sorted(csv_rows(value)[1:]),
    "json_text": json.loads,
    "rows_unordered": lambda value: sorted(map(canon, value)),
}
"""Compare mode -> the form of a value that is equal exactly when COMPARE says so."""


def digest(value, compare):
    """A short hash of ``value`` in its canonical form under ``compare``: two values have
    the same digest when that mode compares them equal (a value the mode cannot parse is
    hashed as it is)."""
    with contextlib.suppress(TypeError, ValueError, csv.Error):
        value = CANONICAL[compare](value)
    return hashlib.sha256(canon(value).encode("utf-8")).hexdigest()[:20]
