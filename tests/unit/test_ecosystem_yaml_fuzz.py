"""A user folder's ecosystem.yaml, fuzzed: 2,000 mutations of the inventory example (a
node replaced by junk or deleted, bytes cut, inserted or broken), each loaded by
``taskfactory plan --ecosystem FOLDER`` through the CLI's ``main`` in this process.  Each
ends in exit code 0 or 2 (one line), never a traceback, and leaves
everything outside its folder as it was.  The folder's code runs in this process here
(its placement is the fuzz's concern no more than its YAML is the sandbox's)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.support.cli_fuzz import CASES, FUZZ, call, check, digest, outside

INVENTORY = Path(__file__).parents[1] / "fixtures" / "ecosystems" / "inventory"
BASE = (INVENTORY / "ecosystem.yaml").read_bytes()
TREE = yaml.safe_load(BASE)
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(),
                                                         max_size=2),
    st.sampled_from(["", "@files", "@nosuch", "@../../..", "../seed.py", "/etc/passwd",
                     "seed.py", "nosuch.py", "{{ x", "{% for %}", "file.ledger", "int",
                     "read", "write", "lines", "nan", "-1", "9" * 30, "x" * 500,
                     "../guard/canary.txt"]))
BYTES = st.one_of(st.binary(max_size=8), st.sampled_from([
    b"\xff\xfe", b"\x00", b": :", b"- [", b"&a [*a]", b"!!python/object/apply:os.system",
    b"\t", b"{", b"}", b"---\n", b"...\n", b"%YAML 9.9\n", b"*nosuch", b"? ",
]))


def paths(node: object, at: tuple = ()) -> list[tuple]:
    """Every path of the YAML tree, as the keys and indices leading to it."""
    found = [at] if at else []
    if isinstance(node, dict):
        for key, child in node.items():
            found += paths(child, (*at, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += paths(child, (*at, i))
    return found


PATHS = paths(TREE)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    how = draw(st.sampled_from(["replace", "delete", "bytes", "cut"]))
    if how in ("replace", "delete"):
        tree = copy.deepcopy(TREE)
        path = draw(st.sampled_from(PATHS))
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        if how == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JUNK)
        return yaml.safe_dump(tree, allow_unicode=True).encode("utf-8", "surrogatepass")
    at = draw(st.integers(0, len(BASE)))
    if how == "cut":
        return BASE[:at]
    return BASE[:at] + draw(BYTES) + BASE[at + draw(st.integers(0, 12)):]


def test_fuzzed_ecosystem_yaml_is_one_line_or_plans(tmp_path, monkeypatch):
    import environments.ecosystems as ecosystems

    monkeypatch.setattr(ecosystems, "placement", lambda folder, builtin_dir: "in-process")
    folder, guard = tmp_path / "eco", tmp_path / "guard"
    shutil.copytree(INVENTORY, folder)
    guard.mkdir()
    (guard / "canary.txt").write_text("host secret\n")
    monkeypatch.chdir(tmp_path)
    before, guarded, ran = outside(), digest(guard), [0]

    @FUZZ
    @given(mutated())
    def one(text: bytes) -> None:
        (folder / "ecosystem.yaml").write_bytes(text)
        args = ["plan", "--ecosystem", str(folder), "--n", "2", "--format", "json"]
        case = call(args)
        check(case, args)
        assert case.code in (0, 2), (text, case)
        assert "host secret" not in case.out + case.err
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            p.name for p in INVENTORY.iterdir()), text
        ran[0] += 1

    one()
    assert ran[0] >= CASES
    assert outside() == before and digest(guard) == guarded
