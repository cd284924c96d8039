"""What a newcomer meets: bare ``taskfactory``, ``--version``, each command's help with
its example, ``query``'s unknown names, the hints' program name, and every command the
README and docs/ show, parsed by the real parser."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import build_parser
from flows.commands.help import EXAMPLES, commands

ROOT = Path(__file__).parents[2]
V1 = ROOT / "tests" / "fixtures" / "datasets" / "v1"
CLI = [sys.executable, "-m", "flows.cli"]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def run_cli(*args, cwd=None, argv0=None):
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=120, cwd=cwd)


def test_bare_command_prints_the_usage_and_one_error_line():
    proc = run_cli()
    assert proc.returncode == 2
    assert proc.stdout.startswith("usage: taskfactory") and "check-harbor" in proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskfactory: error: no command given")


def test_version_is_the_generator_version():
    from tasks.dataset.provenance import generator_version

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout == f"taskfactory {generator_version()}\n"


def test_the_description_is_whole_sentences():
    text = " ".join(build_parser().description.split())
    assert text.endswith(".") and "dataset folder" in text


@pytest.mark.parametrize("name", sorted(commands(build_parser())))
def test_every_command_says_what_it_does_with_defaults_and_a_parsing_example(name):
    sub, about = commands(build_parser())[name]
    text = sub.format_help()
    assert about and sub.description.endswith(".") and "example:\n  taskfactory " in text
    if "--data" in sub._option_string_actions:  # a default shows: the dataset folder
        assert "default data" in " ".join(text.split())
    words = shlex.split(EXAMPLES[name])
    if name in ("export", "import"):  # a group: its example is one of its targets'
        assert " ".join(words[:2]) in EXAMPLES
    args = build_parser().parse_args(words)  # parses: no SystemExit
    assert args.func is not None


def test_query_names_the_tables_and_columns_that_exist(tmp_path):
    shutil.copytree(V1, tmp_path / "data")
    proc = run_cli("query", "select * from nosuch", "--data", tmp_path / "data")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert "tables: attempts, difficulty, rollouts, runs, steps, tasks, trajectories" in lines[0]
    proc = run_cli("query", "select nosuch from steps", "--data", tmp_path / "data")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert "columns of steps: " in lines[0] and ", tool, " in lines[0]


def test_hints_name_the_program_as_it_was_started(tmp_path):
    """Started as .venv/bin/taskfactory, not on the PATH: the hint is the path, which
    works when pasted in the same folder."""
    script = Path(sys.executable).with_name("taskfactory")
    if not script.exists():
        pytest.skip("no taskfactory script beside this Python")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = "/usr/bin:/bin"
    proc = subprocess.run([os.path.relpath(script, ROOT)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    hint = re.search(r"`(\S+) COMMAND --help`", proc.stderr)
    assert hint and hint.group(1) == os.path.relpath(script, ROOT)
    assert subprocess.run([hint.group(1), "--version"], cwd=ROOT, env=env,
                          capture_output=True).returncode == 0


def _shown_commands() -> list[tuple[Path, list[str]]]:
    """Every ``taskfactory ...`` command the README and docs/ show, in code blocks and
    inline code, split as a shell would (a line ending in ``\\`` goes on)."""
    found = []
    for doc in DOCS:
        text = doc.read_text().replace("\\\n", " ")
        for snippet in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) + re.findall(
                r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
            for line in snippet.splitlines():
                m = re.match(r"\s*(?:\$\s+)?(?:uv run\s+)?(?:[\w./-]*/)?taskfactory(?=\s|$)"
                             r"([^|;&>]*)", line)
                if m:
                    try:
                        found.append((doc, shlex.split(m.group(1), comments=True)))
                    except ValueError:  # an unclosed quote in prose: split on spaces
                        found.append((doc, m.group(1).split()))
    return found


def test_docs_show_commands():
    assert len(_shown_commands()) > 20


@pytest.mark.parametrize("doc,words", _shown_commands(),
                         ids=lambda x: x.name if isinstance(x, Path) else " ".join(x)[:60])
def test_every_command_the_docs_show_exists_and_takes_its_flags(doc, words):
    known = commands(build_parser())
    parser, rest = build_parser(), list(words)
    if rest and not rest[0].startswith("-") and rest[0] != "COMMAND":  # COMMAND: any
        name = rest[0] if rest[0] in known else None
        if name and len(rest) > 1 and f"{name} {rest[1]}" in known:
            name = f"{name} {rest[1]}"
        assert name, f"{doc.name}: no command {rest[0]!r} (taskfactory {' '.join(words)})"
        parser = known[name][0]
    for word in rest:
        flag = word.split("=", 1)[0]
        if re.fullmatch(r"--[a-z][a-z0-9-]*", flag):
            assert flag in parser._option_string_actions, (
                f"{doc.name}: {flag} is not an option of `taskfactory {' '.join(words)}`")
