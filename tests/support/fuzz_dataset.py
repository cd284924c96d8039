"""Hypothesis strategies over the files the factory reads from a dataset folder, and how
one fuzz case is laid out, run and judged.

A case is a copy of a real dataset with one damage: the manifest's JSON mutated by
structure (a value somewhere replaced by another type, a huge or negative number,
unicode, a path, deep nesting; a key removed, added or duplicated in a list), the
manifest's bytes cut or flipped, or a listed shard cut, bit-flipped, swapped for
another table's shard or for noise — with the manifest's sha256 and size fixed up or
not, so that the readers also parse damaged Parquet.  :func:`run_case` runs one command
on it in this process and checks what every command promises: no traceback, an exit code
of 0, 2, 3 or 75, warnings and at most one error line (last) on stderr, and nothing
outside the dataset folder and ``--out`` read or written (the guard beside them).  A
case's files are hard links to the original's: a command that wrote a file in place
instead of replacing it would change the original, which the tests compare at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.dataset.store.manifest import MANIFEST
from tests.support.crafted import Guard, cli

EXIT_CODES = {0, 2, 3, 75}
PATHS = ["../../guard/important.txt", "steps/../../../guard/victimdir", "../data/steps",
         "/etc/passwd", "tasks/", "/", "",
         ".", "steps/.", "tasks\\..\\x", "steps/part-\x00.parquet", "runs/part-x-1.parquet"]
KEYS = ["format", "schema_version", "shards", "commits", "runs", "abandoned", "pending",
        "path", "table", "rows", "bytes", "sha256", "run_id", "commit", "status", "settings",
        "20261202T000000-abcdef", "../x", "extra", "\u2603", ""]
NUMBERS = [0, -1, 1, 3, 4, 9, 10, 2**31, 2**63, 2**64, 10**30, 10**400, 1e308, -1e308, 0.5]


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


leaves = st.one_of(
    st.none(), st.booleans(), st.sampled_from(NUMBERS), st.integers(), st.floats(
        allow_nan=False, allow_infinity=False), st.sampled_from(PATHS), st.sampled_from(KEYS),
    st.text(max_size=40), st.integers(0, 260).map(_deep), st.just("x" * 70_000))
values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=6), kids, max_size=4), max_leaves=12)


@dataclass(frozen=True)
class Edit:
    """One structural change: follow ``steps`` into the tree (each an index, modulo the
    children there), then ``op`` the node reached with ``value`` (``key`` for a dict)."""

    steps: tuple[int, ...]
    op: str
    key: str
    value: Any


edits = st.builds(Edit, st.lists(st.integers(0, 40), max_size=5).map(tuple),
                  st.sampled_from(["replace", "delete", "insert", "duplicate"]),
                  st.sampled_from(KEYS), values)


def apply_edit(tree: Any, edit: Edit) -> Any:
    """``tree`` with ``edit`` made (the tree is changed in place; the root may be replaced)."""
    parent, where, node = None, None, tree
    for step in edit.steps:
        children = list(node) if isinstance(node, dict) else (
            list(range(len(node))) if isinstance(node, list) else [])
        if not children:
            break
        parent, where = node, children[step % len(children)]
        node = node[where]
    if edit.op == "replace":
        if parent is None:
            return edit.value
        parent[where] = edit.value
    elif edit.op == "delete" and parent is not None:
        del parent[where]
    elif edit.op == "insert" and isinstance(node, dict):
        node[edit.key] = edit.value
    elif edit.op in ("insert", "duplicate") and isinstance(node, list):
        node.append(edit.value if edit.op == "insert" or not node else node[0])
    return tree


@dataclass(frozen=True)
class BytesEdit:
    """Cut a file at ``at`` (a share of its length), flip bit ``bit`` there, or replace it."""

    op: str
    at: float
    bit: int


byte_edits = st.builds(BytesEdit, st.sampled_from(["cut", "flip", "flip", "noise"]),
                       st.floats(0, 1), st.integers(0, 7))


def apply_bytes(blob: bytes, edit: BytesEdit) -> bytes:
    k = min(int(edit.at * len(blob)), max(len(blob) - 1, 0))
    if edit.op == "cut":
        return blob[:k]
    if edit.op == "noise":
        return hashlib.sha256(blob[:k]).digest() * (1 + k % 64)
    if not blob:
        return blob
    return blob[:k] + bytes([blob[k] ^ (1 << edit.bit)]) + blob[k + 1:]


@dataclass(frozen=True)
class ShardEdit:
    """Damage listed shard ``index`` (modulo their number): bytes, or another table's
    shard in its place; ``fix``: make the manifest vouch for the damaged bytes."""

    index: int
    edit: BytesEdit | None
    fix: bool


shard_edits = st.builds(ShardEdit, st.integers(0, 50), st.none() | byte_edits,
                        st.booleans() | st.just(True))
damage = st.integers(0, 19).flatmap(lambda k: (
    st.lists(edits, min_size=1, max_size=3) if k < 6 else byte_edits if k < 19 else shard_edits))
"""What one case does to the copy: manifest edits (6 cases in 20), the manifest's bytes
(13 in 20) or a shard (1 in 20).  A damaged manifest is refused in milliseconds; a case
whose shards are read costs a whole command (``stats``: 300 ms), so this mix — where one
case in seven or eight reaches the shards — keeps 2,000 cases of a command near a minute."""


def apply_damage(data: Path, change: list[Edit] | BytesEdit | ShardEdit) -> None:
    path = data / MANIFEST
    if isinstance(change, BytesEdit):
        _replace(path, apply_bytes(path.read_bytes(), change))
        return
    raw = json.loads(path.read_text())
    if isinstance(change, list):
        for edit in change:
            raw = apply_edit(raw, edit)
    else:
        entry = raw["shards"][change.index % len(raw["shards"])]
        shard = data / entry["path"]
        if change.edit is None:  # another table's shard: the wrong schema
            other = next(s for s in raw["shards"] if s["table"] != entry["table"])
            blob = (data / other["path"]).read_bytes()
        else:
            blob = apply_bytes(shard.read_bytes(), change.edit)
        _replace(shard, blob)
        if change.fix:
            entry.update(sha256=hashlib.sha256(blob).hexdigest(), bytes=len(blob))
    _replace(path, _dumps(raw).encode())


def _replace(path: Path, blob: bytes) -> None:
    """Write ``path`` as a new file: the case's files are hard links to the original's."""
    path.unlink()
    path.write_bytes(blob)


def _dumps(raw: Any) -> str:
    try:
        return json.dumps(raw)
    except (RecursionError, ValueError):  # deeper than json writes: 'deep' as text
        return json.dumps(str(raw))


def run_case(original: Path, root: Path, guard: Guard, change: object,
             argv: list[str]) -> int:
    """Lay out ``original`` damaged by ``change`` in ``root`` (emptied first), run ``argv``
    (``{out}`` is ``root/out``) and check the promises; returns the exit code."""
    shutil.rmtree(root, ignore_errors=True)
    data, out = root / "data", root / "out"
    shutil.copytree(original, data, copy_function=os.link)  # no command writes in place
    out.mkdir()
    apply_damage(data, change)  # type: ignore[arg-type]
    code, _, err = cli(*[a.format(out=out) for a in argv], "--data", data)
    assert code in EXIT_CODES and "Traceback" not in err, (code, err[-3000:])
    lines = err.strip().splitlines()
    if code in (2, 75):
        assert lines and lines[-1].startswith("taskfactory: error:"), err[-3000:]
        lines = lines[:-1]
    assert all(line.startswith("warning:") for line in lines), err[-3000:]
    assert sorted(p.name for p in root.iterdir()) == ["data", "out"]
    assert guard.changes() == {}
    return code


CASES = 2000
"""Cases per command."""
QUERY = "select (select count(*) from tasks), (select count(*) from trajectories)"
COMMANDS: dict[str, list[list[str]]] = {
    "query": [["query", QUERY, "--format", f] for f in ("table", "csv", "json")],
    "stats": [["stats"], ["stats", "--format", "json"]],
    "repair": [["repair"]],
    "vacuum": [["vacuum", "--older-than", "0s", "--quarantine"],
               ["vacuum", "--older-than", "0s", "--dry-run"]],
    "export": [["export", "sft", "--out", "{out}/sft.jsonl"],
               ["export", "harbor", "--out", "{out}/harbor"]],
}
"""The commands fuzzed, each with the forms a case picks from."""


def make_original(folder: Path) -> Path:
    """The dataset every case copies: one accepted task of the ``files`` ecosystem, made
    by the pipeline on the local backend, as ``taskfactory run`` writes it."""
    from environments.local.config import LocalConfig
    from tests.support.dataset import write_outcomes
    from tests.support.harbor_data import accepted

    data = folder / "data"
    write_outcomes(data, "utest-fuzz", accepted(["files"], LocalConfig(), 1,
                                                f"utest-fuzz-{os.getpid()}"))
    return data


def fuzz(original: Path, root: Path, command: str) -> Counter:
    """Run :data:`CASES` cases of ``command`` (hypothesis, derandomized); the exit codes
    seen.  The original is unchanged at the end (the cases' files are hard links to it)."""
    guard, before = Guard(root / "guard"), Guard.digest(original)
    codes: Counter = Counter()
    forms = COMMANDS[command]

    @settings(max_examples=CASES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(change=damage, form=st.integers(0, len(forms) - 1))
    def case(change: object, form: int) -> None:
        codes[run_case(original, root / "case", guard, change, forms[form])] += 1

    case()
    assert Guard.digest(original) == before
    print(f"fuzz {command}: {sum(codes.values())} cases, exit codes {dict(sorted(codes.items()))}")
    assert sum(codes.values()) >= CASES and codes[0] + codes[3] > 0, codes
    assert command == "repair" or codes[2] > 0, codes  # repair mends nearly everything
    return codes
