"""Shortcut controls for the ``git`` ecosystem: point the expected ref at a fake commit.

``empty`` points a branch or tag at a new commit with an empty tree; ``fill`` at a new
commit whose only file holds the instruction's literals, one per line, with the first
literal as its subject.  The seeded history is untouched.
"""

from __future__ import annotations

import shlex


def _point(key: str, expected: dict, make_commit: str) -> str | None:
    refs = [f"refs/heads/{key}"] if "branches" in expected else []
    refs += [f"refs/tags/{key}"] if "tags" in expected else []
    if not refs:
        return None
    return "\n".join([make_commit] + [f"git update-ref {shlex.quote(r)} \"$c\"" for r in refs])


def empty(key: str, expected: dict) -> str | None:
    return _point(key, expected, 'c=$(git commit-tree "$(git mktree </dev/null)" -m empty)')


def fill(key: str, expected: dict, literals: list[str]) -> str | None:
    text = "".join(lit + "\n" for lit in literals)
    subject = literals[0] if literals else "literals"
    make = (f"b=$(printf %s {shlex.quote(text)} | git hash-object -w --stdin)\n"
            "t=$(printf '100644 blob %s\\tliterals.txt\\n' \"$b\" | git mktree)\n"
            f"c=$(git commit-tree \"$t\" -m {shlex.quote(subject)})")
    return _point(key, expected, make)
