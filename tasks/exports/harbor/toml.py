"""A small TOML writer for the documents taskfactory emits (Python 3.11 reads TOML only).

Supports what ``task.toml`` needs: strings, booleans, integers, finite floats, lists of
those, and nested tables (dicts).  ``None`` values are left out (TOML has no null).
Keys that are not bare (``A-Za-z0-9_-``) are quoted.  The output parses back with
``tomllib`` to the same data minus the ``None`` entries.
"""

from __future__ import annotations

import json
import math
import re

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")

Scalar = str | bool | int | float


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML cannot hold the float {value!r} here")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value if v is not None) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def dumps(document: dict[str, object]) -> str:
    """``document`` as TOML text: scalars of a table first, then its sub-tables."""
    out: list[str] = []
    _table(document, [], out)
    return "\n".join(out).strip() + "\n"


def _table(table: dict[str, object], path: list[str], out: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if v is not None and not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        out.append(f"\n[{'.'.join(_key(p) for p in path)}]")
    out.extend(f"{_key(k)} = {_value(v)}" for k, v in scalars.items())
    for name, sub in tables.items():
        _table(sub, [*path, name], out)  # type: ignore[arg-type]
