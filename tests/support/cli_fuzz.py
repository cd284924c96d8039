"""Fuzzing the command line: argv for every subcommand, drawn from the parser itself, and
what one call of ``flows.cli.main`` (in this process, milliseconds a case) must do.

Each option gets values from its own domain (its choices, numbers near and past its
bounds, the real test dataset, SQL) mixed with junk: empty and blank strings, NaN and
infinities, huge numbers, non-UTF-8 bytes (lone surrogates, as Python decodes them
from argv), paths outside any dataset, other options' spellings.  A case may drop
required options, repeat one, or add an unknown one.

What a case must do (:func:`check`): return an exit code of the documented set (0; 2
for bad input, with exactly one line ``taskfactory: error: ...`` on stderr; 3 when it
answered from intact shards only), never raise (a traceback), and write nothing outside
its temporary folder.  The first call that would start Prefect, Docker or a long
computation is replaced by :class:`Boundary` (a fake, because a valid case would run for
minutes there; each command is run for real by its own tests): reaching it is the
outcome "accepted", and bad input must never reach it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "fixtures" / "datasets" / "v1"
CASES = 2000
FUZZ = settings(max_examples=CASES, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
"""2,000 cases per subcommand; derandomized, so a run is reproducible and needs no
example database (nothing written in the working tree)."""
EXIT_CODES = {0, 2, 3}

BOUNDARIES = {
    "flows.commands.run._run": "run: the engine, the temporary Prefect server, the flow",
    "flows.commands.run._serve": "serve: Prefect serves the flow",
    "flows.commands.solve._solve": "solve: the engine, Prefect, the agent's endpoint",
    "flows.commands.harbor._run_checks": "check-harbor and export harbor --check: the engine",
    "tasks.plan.planner.plan_candidates": "plan: planning --n graphs",
    "tasks.dataset.dataset.Dataset.write_card": "card: matplotlib plots of the dataset",
    "tasks.conformance.checks.seed_findings": "check-ecosystem: the ecosystem's seed runs",
}
"""Where a case stops once its input is accepted (module.attribute -> what starts there)."""


class Boundary(BaseException):  # noqa: N818 - not an error: the case got through
    """Raised where a valid case would start Prefect, Docker or a long computation."""


@dataclass
class Case:
    code: int
    out: str
    err: str
    reached: str | None


def stub_boundaries(monkeypatch) -> None:  # noqa: ANN001
    for target in BOUNDARIES:
        module, _, attr = target.rpartition(".")

        def stop(*_args: object, _target: str = target, **_kwargs: object) -> None:
            raise Boundary(_target)

        monkeypatch.setattr(f"{module}.{attr}" if "." in module else target, stop)


def call(argv: list[str]) -> Case:
    """One in-process call of the CLI's ``main``; its exit code, output and whether it
    reached a boundary.  Anything else it raises propagates: a traceback."""
    from flows.cli import main

    out, err, reached = io.StringIO(), io.StringIO(), None
    environ = dict(os.environ)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except Boundary as stop:
            code, reached = 0, str(stop)
        except SystemExit as exit_:  # argparse's --help; repair's interrupt
            code = int(exit_.code or 0)
        finally:
            os.environ.clear()
            os.environ.update(environ)
    return Case(code, out.getvalue(), err.getvalue(), reached)


def check(case: Case, argv: list[str]) -> None:
    """The contract of one case (see the module docstring)."""
    assert case.code in EXIT_CODES, (argv, case)
    assert "Traceback" not in case.err, (argv, case.err)
    lines = case.err.splitlines()
    if case.code == 2:
        assert len(lines) == 1 and lines[0].startswith("taskfactory: error: "), (argv, lines)
        assert case.reached is None, (argv, case.reached)


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def outside() -> dict[str, object]:
    """What the fuzz must leave alone: the working tree's top level, the test dataset,
    and files of this process in the system's temporary folder other than DuckDB's
    scratch folder (a temporary Prefect server's log would be one)."""
    import tempfile

    pid = str(os.getpid())
    mine = sorted(p.name for p in Path(tempfile.gettempdir()).iterdir()
                  if pid in p.name and not p.name.startswith("taskfactory-duckdb-"))
    return {"tree": sorted(p.name for p in ROOT.iterdir()), "v1": digest(V1), "tmp": mine}


# ---- values ------------------------------------------------------------------------------

JUNK = st.sampled_from([
    "", " ", "-", "--", "0", "-1", "1", "2", "8", "9", "99", "64", "65", "1e400", "-1e400",
    "nan", "NaN", "inf", "-inf", "1.5", "0x10", "١٢", "1:nan", "2:inf", "build:inf",
    "build:-1", "fix:0", "a,b", ",", ":", "1:1,1:2", "\udcff", "select \udcff", "x" * 300,
    "../x", "/nonexistent/x", "--data", "--help", "-h", "data", "files", "nosuch",
    "'; drop table tasks; --", "0 3 * * *", "not a cron", "* * * * * * *",
])
"""Values that break one option or another."""
NUMBERS = st.one_of(st.integers(-3, 70).map(str), st.integers().map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr))
SQL = st.sampled_from([
    "select 1", "select count(*) from tasks", "select * from attempts",
    "select ecosystem, count(*) from tasks group by 1", "describe tasks",
    "select * from nosuch", "UPDATE EXTENSIONS", "copy tasks to 'x.csv'",
    "select * from read_text('/etc/passwd')", "attach 'x.db'", "select 1; select 2",
    "install httpfs", "set threads = 1", "pragma version", "select 1 as a, 2 as a",
    "select 'nan'::double", "select \udcff", "", "  ", "select", "ecosystem = 'files'",
    "pass_at_k < 0.75", "1 = 1) or (1 = 1",
])


def paths(tmp: Path) -> st.SearchStrategy[str]:
    """Paths an option may name: the dataset copy, places in the case's folder (missing,
    a file, nested), nowhere, and junk."""
    return st.one_of(st.sampled_from([
        str(tmp / "set"), str(tmp / "missing"), str(tmp / "a-file"),
        str(tmp / "a-file" / "below"), str(tmp / "new" / "deeper"), "data", "missing",
        "/nonexistent/x", "", " ", str(tmp / "out.jsonl"), str(tmp / "\udcffname"),
    ]), JUNK)


DOMAINS: dict[str, Callable[[Path], st.SearchStrategy[str]]] = {
    "data": paths, "out": paths, "folders": paths, "report": paths, "tokenizer": paths,
    "ecosystem_dir": paths,
    "sql": lambda tmp: SQL, "where": lambda tmp: SQL,
    "ecosystem": lambda tmp: st.sampled_from(["files", "sql", "git", "service", "files,sql",
                                               "files,files", "", " , ", "nosuch",
                                               str(tmp / "missing"), str(tmp / "set")]),
    "depth_weights": lambda tmp: st.sampled_from(["1:1,2:2", "3", "9:1", "0:1", "1:0",
                                                   "1:nan", "2:inf", "", "x", "1:-1"]),
    "kinds": lambda tmp: st.sampled_from(["build:2,fix:1", "fix", "reconstruct:1", "mend:1",
                                           "", "build:inf", "build:0", "build:nan"]),
    "older_than": lambda tmp: st.sampled_from(["7d", "0s", "12h", "2w", "30m", "", "7",
                                                "d", "-1d", "1e400d", "9999999999999w"]),
    "memory_limit": lambda tmp: st.sampled_from(["1GB", "512MB", "10MB", "1", "lots", "",
                                                  "-1GB", "1e9GB", "2 GiB"]),
    "cron": lambda tmp: st.sampled_from(["0 3 * * *", "*/5 * * * *", "not a cron", "",
                                          "61 * * * *", "@daily"]),
    "address": lambda tmp: st.sampled_from(["tcp://127.0.0.1:9", "localhost", ""]),
    "base_url": lambda tmp: st.sampled_from(["http://127.0.0.1:9/v1", "", "not a url"]),
    "resume": lambda tmp: st.sampled_from(["nosuch-run", ""]),
}


def value(action: argparse.Action, tmp: Path) -> st.SearchStrategy[str]:
    """Values for one option: its domain, its choices, numbers, junk."""
    own = [DOMAINS[action.dest](tmp)] if action.dest in DOMAINS else []
    if action.choices is not None:
        own.append(st.sampled_from([str(c) for c in action.choices]))
    return st.one_of(*own, NUMBERS, JUNK, st.text(max_size=12))


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (subcommand words, its parser) of the CLI."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from subcommands(child, (*path, name))


def valid(words: tuple[str, ...], tmp: Path) -> list[str]:
    """A command line of ``words`` that is accepted: the start of some cases, which the
    options drawn after it then change."""
    data = ["--data", str(tmp / "set")]
    return {
        "run": [*data, "--ecosystem", "files", "--backend", "local"],
        "serve": [*data, "--ecosystem", "files"],
        "plan": ["--ecosystem", "files", "--n", "5"],
        "check-ecosystem": ["files", "--backend", "local"],
        "solve": [*data, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],  # too old
        "check-harbor": [str(tmp / "harbor"), *data],  # no folders: the dataset is too old
        "vacuum": [*data, "--older-than", "7d", "--dry-run"],
        "query": ["select count(*) from tasks", *data],
        "export sft": [*data, "--out", str(tmp / "sft.jsonl")],
        "export harbor": [*data, "--out", str(tmp / "harbor-out")],
        "export preference": [*data, "--out", str(tmp / "pairs.jsonl")],
    }.get(" ".join(words), data)


NEVER_ACCEPTED = {"export harbor", "export preference", "check-harbor", "solve"}
"""Subcommands no case can get through here: the test dataset's tasks are of a schema too
old to export or solve, and it holds no rollouts (their accepted path is tested end to
end in tests/integration/test_harbor_check.py and tests/integration/test_solve_agents.py)."""
SLOW = {"stats", "export sft", "export harbor", "export preference"}
"""Subcommands whose accepted cases take a few hundred ms (the report, the exports):
one case in 40 starts valid, against one in 3 for the others."""


@st.composite
def argv(draw: st.DrawFn, words: tuple[str, ...], parser: argparse.ArgumentParser,
         tmp: Path) -> list[str]:
    """One command line for the subcommand ``words``."""
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    odds = 40 if " ".join(words) in SLOW else 3
    args: list[str] = valid(words, tmp) if draw(st.integers(0, odds - 1)) == 0 else []
    chosen = draw(st.lists(st.sampled_from(actions),  # a valid start keeps one change at most
                           max_size=1 if args else len(actions) + 2))
    for action in chosen:
        if not action.option_strings:  # a positional
            args.append(draw(value(action, tmp)))
            continue
        args.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs != 0 and not (action.nargs == "?" and draw(st.booleans())):
            args.append(draw(value(action, tmp)))
    if draw(st.integers(0, 20)) == 0:
        args.append(draw(st.sampled_from(["--nosuch", "extra", "-x", "--data=", "--"])))
    return [*words, *args]


def fuzz(words: tuple[str, ...], tmp: Path, monkeypatch) -> Counter[str]:  # noqa: ANN001
    """Run :data:`CASES` cases of the subcommand ``words`` in ``tmp`` (a fresh copy of
    the test dataset, a file, the working directory, HOME); how many ended how (``exit
    N``, or ``accepted`` at a boundary)."""
    import shutil

    from hypothesis import given

    from flows.cli import build_parser

    shutil.copytree(V1, tmp / "set")
    (tmp / "a-file").write_text("not a folder\n")
    for name, where in (("HOME", tmp), ("PREFECT_HOME", tmp / "prefect")):
        monkeypatch.setenv(name, str(where))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.chdir(tmp)
    stub_boundaries(monkeypatch)
    parser = dict(subcommands(build_parser()))[words]
    before, ended = outside(), Counter[str]()

    @FUZZ
    @given(argv(words, parser, tmp))
    def one(args: list[str]) -> None:
        case = call(args)
        check(case, args)
        assert sorted(p.name for p in ROOT.iterdir()) == before["tree"], args
        ended["accepted" if case.reached else f"exit {case.code}"] += 1

    one()
    assert outside() == before
    return ended


def fuzz_subcommand(words: tuple[str, ...], tmp: Path, monkeypatch) -> None:  # noqa: ANN001
    """:func:`fuzz` ``words``, and check that every case ran and both bad and (where the
    test dataset allows) accepted command lines were among them."""
    ended = fuzz(words, tmp, monkeypatch)
    assert sum(ended.values()) >= CASES, ended
    assert ended["exit 2"], ended
    if " ".join(words) not in NEVER_ACCEPTED:
        assert ended["exit 0"] + ended["accepted"] >= 10, ended
