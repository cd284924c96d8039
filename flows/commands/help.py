"""What the command line says beyond its options: the program's description, each
command's description, defaults and one example, ``--version``, and the name to type.

:func:`document` fills in a built parser: a command's description is its one-line help
made a sentence, its epilog one example (in :data:`EXAMPLES`, which a test parses), and
every option with a default shows it.  Hints that the CLI prints name the program with
:func:`command`, which is what works when pasted where it was typed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from functools import cache
from pathlib import Path

DESCRIPTION = ("Generate executable agent tasks (a workflow run in a sandbox, checked by a "
               "gate) into a dataset folder; query, report on, solve and export it.")
EPILOG = ("start with `{prog} run --tasks 20 --data data`, then `{prog} query "
          "\"select * from tasks limit 5\" --data data`; `{prog} COMMAND --help` tells "
          "what each command does, its defaults and an example")
EXAMPLES: dict[str, str] = {
    "run": "run --tasks 20 --seed 1 --data data",
    "query": "query \"select ecosystem, count(*) as tasks from tasks group by ecosystem\" "
             "--data data --format csv",
    "stats": "stats --data data",
    "card": "card --data data",
    "plan": "plan --ecosystem git --n 200 --kinds build:2,fix:1",
    "export": "export sft --format hf --out sft.jsonl --data data",
    "export sft": "export sft --format hf --out sft.jsonl --data data",
    "export harbor": "export harbor --out harbor-tasks --data data --check",
    "export preference": "export preference --out pairs.jsonl --data data",
    "export atif": "export atif --out atif --data data",
    "import": "import atif trials/ --data data",
    "import atif": "import atif trials/ --data data",
    "solve": "solve --data data --k 4 --base-url http://127.0.0.1:8000/v1 --model my-model",
    "check-harbor": "check-harbor harbor-tasks --data data",
    "check-ecosystem": "check-ecosystem files --tasks 4",
    "repair": "repair --data data",
    "vacuum": "vacuum --data data --older-than 7d --dry-run",
    "serve": "serve --tasks 200 --cron '0 3 * * *' --data data",
}
"""One example per command, after the program's name; each parses (a test checks)."""


@cache
def command() -> str:
    """The program's name as it works when pasted in the folder it was started from:
    ``taskfactory`` when that name on the PATH is this program (an activated venv, an
    install), else the path it was started by (``.venv/bin/taskfactory``)."""
    started = Path(sys.argv[0])
    if started.name != "taskfactory":  # python -m flows.cli, a test: the plain name
        return "taskfactory"
    found = shutil.which("taskfactory")
    if found and Path(found).resolve() == started.resolve():
        return "taskfactory"
    here = started.absolute()
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; an option's default after its help, unless
    the help names it already or there is none to name."""

    def _get_help_string(self, action: argparse.Action) -> str:
        about = action.help or ""
        if (not action.option_strings or "default" in about
                or action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0):
            return about
        return f"{about} (default %(default)s)" if about else "default %(default)s"


class Version(argparse.Action):
    """``--version``: the generator version (package and commit), as the dataset records
    it; read only when asked (it runs git)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the generator version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from tasks.dataset.provenance import generator_version

        print(f"taskfactory {generator_version()}")
        parser.exit()


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """Every command under ``parser`` (``"export sft"`` for a nested one): its parser and
    its one-line help."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                key = (*path, name)
                found[" ".join(key)] = (sub, helps.get(name, ""))
                found.update(commands(sub, key))
    return found


def document(parser: argparse.ArgumentParser) -> None:
    """Fill in the description, example and defaults of ``parser`` and of its commands;
    KeyError names a command without an example in :data:`EXAMPLES`."""
    prog = command()
    parser.description = textwrap.fill(DESCRIPTION, 88)
    parser.epilog = textwrap.fill(EPILOG.format(prog=prog), 88)
    parser.formatter_class = Formatter
    parser.add_argument("--version", action=Version)
    for name, (sub, about) in commands(parser).items():
        sentence = sub.description or about
        sub.description = sentence[:1].upper() + sentence[1:].rstrip(".") + "."
        sub.epilog = f"example:\n  {prog} {EXAMPLES[name]}"
        sub.formatter_class = Formatter
        for action in sub._actions:  # argparse shows no default of an option without help
            if action.option_strings and not action.help and action.nargs != 0 \
                    and action.default not in (None, False, argparse.SUPPRESS):
                action.help = "default %(default)s"

