"""Seed determinism and ecosystem spec errors that name the file and the field."""

import shutil
import subprocess
import sys

import pytest

from environments.ecosystems import EcosystemError, load_ecosystem

FILES = load_ecosystem("files")


def test_same_seed_same_bytes_different_seed_different_bytes():
    assert FILES.seed_state(42) == FILES.seed_state(42)
    assert FILES.seed_state(42) != FILES.seed_state(43)


def test_seeded_state_is_realistic_and_typed():
    state = FILES.seed_state(5)
    types = {FILES.state_type(p) for p in state} - {None}
    assert {"file.text.lines.log", "file.text.csv", "file.text.json",
            "file.text.lines.prose"} <= types
    assert b"@" in state["data/customers.csv"]  # emails from the fake-data library


@pytest.fixture
def eco_copy(tmp_path):
    dst = tmp_path / "myeco"
    shutil.copytree(FILES.folder, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _mutate(folder, old, new):
    spec = folder / "ecosystem.yaml"
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))


def test_user_folder_loads(eco_copy):
    eco = load_ecosystem(str(eco_copy))
    assert eco.folder == eco_copy.resolve() and len(eco.spec.tools) == len(FILES.spec.tools)


@pytest.mark.parametrize("old,new,field", [
    ("parser: int}", "parser: integer}", "tools.{count_matches} (count_matches).returns.parser"),
    ("command: wc -l < {{ path }}", "", "tools.{count_lines} (count_lines).command"),
    ("facet: token, of: path}", "facet: nosuch, of: path}", "sample.facet"),
    ("effect: read", "effect: sometimes", "effect"),
])
def test_malformed_spec_names_file_and_field(eco_copy, old, new, field):
    _mutate(eco_copy, old, new)
    with pytest.raises(EcosystemError) as err:
        load_ecosystem(str(eco_copy))
    message = str(err.value)
    assert str(eco_copy / "ecosystem.yaml") in message
    assert field.format(**{t.name: i for i, t in enumerate(FILES.spec.tools)}) in message
    assert "\n" not in message


def test_unknown_ecosystem_lists_the_choices():
    with pytest.raises(EcosystemError, match="unknown ecosystem 'nope'.*files"):
        load_ecosystem("nope")


@pytest.mark.parametrize("name", ["x" * 300, "../ecosystems/files", "files/../sql"])
def test_a_name_is_a_built_in_or_a_folder_never_a_path_under_the_built_ins(name, tmp_path,
                                                                          monkeypatch):
    """A name too long for the file system is unknown, not a traceback; a path is taken
    relative to where the command runs, never below the built-ins' folder."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EcosystemError, match="unknown ecosystem"):
        load_ecosystem(name)


def _set_probe(folder, value):
    spec = folder / "ecosystem.yaml"
    lines = [f"probe: {value}" if line.startswith("probe:") else line
             for line in spec.read_text().splitlines()]
    spec.write_text("\n".join(lines) + "\n")


def test_a_folder_may_reuse_a_builtin_probe(eco_copy):
    for own in ("probe.py", "file_entry.py"):
        (eco_copy / own).unlink()
    _set_probe(eco_copy, '"@files"')
    assert load_ecosystem(str(eco_copy)).probe_source == FILES.probe_source
    _set_probe(eco_copy, '"@nosuch"')
    with pytest.raises(EcosystemError, match="field 'probe'.*names no probe script"):
        load_ecosystem(str(eco_copy))


def test_a_probe_is_joined_from_its_parts_in_order(eco_copy):
    (eco_copy / "probe.py").unlink()
    (eco_copy / "tail.py").write_text("print(len(file_entry('notes.txt')))\n")
    _set_probe(eco_copy, '["@files/file_entry.py", tail.py]')
    source = load_ecosystem(str(eco_copy)).probe_source
    shared = (FILES.folder / "file_entry.py").read_text()
    assert source == shared + "\n" + "print(len(file_entry('notes.txt')))\n"
    (eco_copy / "notes.txt").write_text("four")
    ran = subprocess.run([sys.executable, "-"], input=source, text=True, cwd=eco_copy,
                         capture_output=True, check=True)
    assert ran.stdout == "4\n"  # the later part calls what the earlier one defined
    _set_probe(eco_copy, '["@files/nosuch.py", tail.py]')
    with pytest.raises(EcosystemError, match="field 'probe'.*names no probe script"):
        load_ecosystem(str(eco_copy))
