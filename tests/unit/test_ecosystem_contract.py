"""The ecosystem contract: functions that cannot take what taskfactory passes them are
refused when the ecosystem loads, in one line naming the file and the function, whether
the folder's code runs in this process or in worker processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import environments.ecosystems as ecosystems
from environments.ecosystems import BUILTIN_DIR, EcosystemError, load_ecosystem
from environments.ecosystems.contract import accepts

INVENTORY = Path(__file__).parents[1] / "fixtures" / "ecosystems" / "inventory"


@pytest.mark.parametrize("shape,positional,keywords,ok", [
    ([("seed", "POSITIONAL_OR_KEYWORD", False)], 1, (), True),
    ([("seed", "POSITIONAL_OR_KEYWORD", False)], 2, (), False),
    ([("seed", "POSITIONAL_OR_KEYWORD", False), ("size", "POSITIONAL_OR_KEYWORD", False)],
     1, (), False),
    ([("seed", "POSITIONAL_OR_KEYWORD", False), ("size", "KEYWORD_ONLY", True)], 1, (), True),
    ([("args", "VAR_POSITIONAL", False)], 3, (), True),
    ([("c", "POSITIONAL_ONLY", False), ("r", "POSITIONAL_ONLY", False)], 2, ("column",), False),
    ([("c", "POSITIONAL_ONLY", False), ("r", "POSITIONAL_ONLY", False),
      ("column", "POSITIONAL_OR_KEYWORD", True)], 2, ("column",), True),
    ([("c", "POSITIONAL_ONLY", False), ("r", "POSITIONAL_ONLY", False),
      ("kw", "VAR_KEYWORD", False)], 2, ("column", "key"), True),
    ([("c", "POSITIONAL_OR_KEYWORD", False), ("r", "POSITIONAL_OR_KEYWORD", False)],
     2, ("c",), False),  # c would get two values
])
def test_accepts(shape: list[tuple[str, str, bool]], positional: int, keywords: tuple[str, ...],
                 ok: bool) -> None:
    assert accepts(shape, positional, keywords) is ok


@pytest.fixture(params=["workers", "in-process"])
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A copied folder is a user's (its code runs in workers); ``in-process`` loads it the
    way the built-ins are loaded."""
    if request.param == "in-process":
        monkeypatch.setattr(ecosystems, "placement", lambda folder, builtin_dir: "in-process")
    else:
        monkeypatch.setenv("TASKFACTORY_ISOLATE_BUILTINS", "1")  # the built-ins too
    return str(request.param)


def _copy(src: Path, tmp_path: Path, file: str, old: str, new: str) -> Path:
    folder = tmp_path / src.name
    shutil.copytree(src, folder)
    text = (folder / file).read_text()
    assert old in text
    (folder / file).write_text(text.replace(old, new, 1))
    return folder


def _refusal(folder: Path) -> str:
    with pytest.raises(EcosystemError) as caught:
        load_ecosystem(str(folder))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_seed_function_with_another_signature(tmp_path: Path, isolation: str) -> None:
    folder = _copy(INVENTORY, tmp_path, "seed.py", "def generate(seed: int)",
                   "def generate(seed: int, size: int)")
    assert _refusal(folder) == (f"{folder / 'seed.py'}: function generate(seed, size) cannot "
                                "be called as generate(seed); give it that signature")


def test_an_optional_layout_that_takes_nothing(tmp_path: Path, isolation: str) -> None:
    folder = _copy(INVENTORY, tmp_path, "seed.py", "def layout(seed: int)", "def layout()")
    assert _refusal(folder).startswith(f"{folder / 'seed.py'}: function layout() cannot be "
                                       "called as layout(seed)")


def test_a_sampler_without_the_context_its_tool_passes(tmp_path: Path, isolation: str) -> None:
    folder = _copy(BUILTIN_DIR / "files", tmp_path, "samplers.py",
                   'def csv_value(content: bytes, rng: random.Random, column: str = "", **_: str)',
                   "def csv_value(content: bytes, rng: random.Random)")
    assert _refusal(folder) == (
        f"{folder / 'samplers.py'}: function csv_value(content, rng) cannot be called as "
        "csv_value(content, rng, column=...); give it that signature")


def test_a_shortcut_fill_without_literals(tmp_path: Path) -> None:
    folder = _copy(BUILTIN_DIR / "sql", tmp_path, "shortcuts.py",
                   "def fill(key: str, expected: dict, literals: list[str])",
                   "def fill(key: str, expected: dict)")
    assert _refusal(folder).startswith(f"{folder / 'shortcuts.py'}: function fill(key, "
                                       "expected) cannot be called as fill(key, expected, "
                                       "literals)")


def test_a_missing_seed_function_names_the_field(tmp_path: Path, isolation: str) -> None:
    folder = _copy(INVENTORY, tmp_path, "ecosystem.yaml", "seed: {module: seed.py}",
                   "seed: {module: seed.py, function: make}")
    assert _refusal(folder) == (f"{folder / 'ecosystem.yaml'}: field 'seed.function': seed.py "
                                "has no function 'make'")


@pytest.mark.parametrize("name", ["files", "sql", "git", "service"])
def test_the_built_ins_keep_the_contract(name: str, isolation: str) -> None:
    eco = load_ecosystem(name)
    assert eco.name == name and eco.seed_fn is not None
