"""Execution-time samplers for the ``files`` ecosystem.

Each sampler takes the bytes of the file bound to the parameter named in ``sample.of``,
a seeded ``random.Random`` and the other resolved arguments it asked for, and returns a
literal that makes the tool call meaningful on exactly that content.  A sampler raises
``LookupError`` when the content offers no such literal.
"""

from __future__ import annotations

import json
import random
import re

TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{2,}")
UNTELLING = frozenset({"INFO", "DEBUG", "TRACE", "about", "after", "before", "from", "have",
                       "into", "over", "that", "then", "this", "when", "will", "with"})
"""Words nobody searches a file for: a log's routine levels, and function words."""


def _lines(content: bytes) -> list[str]:
    return content.decode(errors="replace").splitlines()


def token(content: bytes, rng: random.Random, **_: str) -> str:
    """A word found on some lines but not all: a selective, non-trivial filter.

    Prefers words on a quarter or more of the lines, so that later steps of a workflow
    still have material to work on, and words of four characters or more: a search for
    `for` or `lot` is nobody's question, and it also matches `format` and `slot`.  Nor
    is a search for a log's routine levels (``INFO``) or for ``with``
    (:data:`UNTELLING`): people search a log for trouble, a component or an event, down
    to words on a twentieth of its lines where no common word tells anything."""
    lines = _lines(content)
    counts: dict[str, int] = {}
    for line in lines:
        for word in set(TOKEN.findall(line)):
            counts[word] = counts.get(word, 0) + 1

    def on(floor: int, telling: bool) -> list[str]:
        return sorted(w for w, c in counts.items() if floor <= c < len(lines)
                      and (not telling or (len(w) >= 4 and w not in UNTELLING)))

    quarter, twentieth = max(2, len(lines) // 4), max(2, len(lines) // 20)
    good = (on(quarter, True) or on(twentieth, True) or on(quarter, False)
            or on(0, False))
    if not good:
        raise LookupError("no selective token in file")
    return rng.choice(good)


def line_count(content: bytes, rng: random.Random, **_: str) -> str:
    """A strict prefix length that keeps at least half of the lines, and two or more
    ("the first 1 lines" is no sentence a person writes)."""
    n = len(_lines(content))
    if n < 3:
        raise LookupError("file too short to take a strict prefix of two lines or more")
    return str(rng.randint(max(2, n // 2), n - 1))


def _table(content: bytes) -> tuple[list[str], list[list[str]]]:
    lines = _lines(content)
    if len(lines) < 2:
        raise LookupError("csv has no rows")
    header = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:] if line]
    return header, [r for r in rows if len(r) == len(header)]


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def csv_column(content: bytes, rng: random.Random, **_: str) -> str:
    header, _ = _table(content)
    return rng.choice(header)


def csv_numeric_column(content: bytes, rng: random.Random, **_: str) -> str:
    header, rows = _table(content)
    numeric = [h for i, h in enumerate(header)
               if all(_is_number(r[i]) for r in rows) and not h.endswith("_id")]
    if not numeric:
        raise LookupError("csv has no numeric column")
    return rng.choice(numeric)


def csv_category_column(content: bytes, rng: random.Random, **_: str) -> str:
    """A non-numeric column whose values repeat: filtering on it keeps a real subset."""
    header, rows = _table(content)
    cats = [h for i, h in enumerate(header) if not any(_is_number(r[i]) for r in rows)
            and 1 < len({r[i] for r in rows}) < len(rows)]
    if not cats:
        raise LookupError("csv has no categorical column")
    return rng.choice(cats)


def csv_value(content: bytes, rng: random.Random, column: str = "", **_: str) -> str:
    header, rows = _table(content)
    if column not in header:
        raise LookupError(f"csv has no column {column!r}")
    i = header.index(column)
    return rng.choice(sorted({r[i] for r in rows}))


def _object(content: bytes) -> dict:
    try:
        data = json.loads(content)
    except ValueError as exc:  # not JSON, or not UTF-8
        raise LookupError(f"not a JSON document: {exc}") from None
    if not isinstance(data, dict):
        raise LookupError("json is not an object")
    return data


def json_key(content: bytes, rng: random.Random, **_: str) -> str:
    data = _object(content)
    keys = sorted(k for k, v in data.items() if isinstance(v, str | int | float | bool))
    if not keys:
        raise LookupError("json has no scalar field")
    return rng.choice(keys)


def json_value(content: bytes, rng: random.Random, key: str = "", **_: str) -> str:
    """A new JSON literal of the same type as the current value, different from it."""
    data = _object(content)
    if key not in data:
        raise LookupError(f"json has no field {key!r}")
    old = data[key]
    if isinstance(old, bool):
        new: object = not old
    elif isinstance(old, int):
        new = old + rng.choice([1, 2, 5, 10, 100]) * rng.choice([1, -1] if old > 100 else [1])
    elif isinstance(old, float):
        new = round(old * rng.uniform(1.1, 2.0), 2)
    else:
        new = rng.choice(["eu-north-1", "us-west-2", "staging", "blue", "canary", "ops-team"])
        new = new if new != old else f"{old}-v2"
    return json.dumps(new)


# ---- describers: the distinguishing value of a seeded file ------------------------------

def first_line(content: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The first line of the seeded text file ``value`` (probe state); LookupError when it
    has none worth naming it by (binary, shorter than 8 or longer than 120 characters, or
    fewer than 6 letters and digits: a JSON file's ``{``)."""
    text = content.get("files", {}).get(value)
    line = text.splitlines()[0] if isinstance(text, str) and text.strip() else ""
    if not 8 <= len(line.strip()) <= 120 or len(re.findall(r"[A-Za-z0-9]", line)) < 6:
        raise LookupError(f"{value!r} has no first line distinctive enough to name it by")
    return line



# ---- lookups' wrong guesses: other values of their type from the probe state -------------

def _log_words(content: dict) -> list[list[str]]:
    """The whitespace-separated words of every line of the seeded logs (probe state)."""
    files = content.get("files", {})
    return [line.split() for path in sorted(files) if path.startswith("logs/")
            and path.endswith(".log") and isinstance(files[path], str)
            for line in files[path].splitlines()]


def log_component(content: dict, rng: random.Random, **_: str) -> str:
    """A component the logs name (the word in square brackets), without its brackets."""
    names = sorted({w[2][1:-1] for w in _log_words(content)
                    if len(w) > 2 and len(w[2]) > 2 and w[2][0] == "[" and w[2][-1] == "]"})
    if not names:
        raise LookupError("no log line names a component")
    return rng.choice(names)


def error_time(content: dict, rng: random.Random, **_: str) -> str:
    """The timestamp of a line at level ERROR in the logs, as the log writes it."""
    stamps = sorted({w[0] for w in _log_words(content) if len(w) > 1 and w[1] == "ERROR"})
    if not stamps:
        raise LookupError("no log line at level ERROR")
    return rng.choice(stamps)
