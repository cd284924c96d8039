"""The ``taskfactory`` command line: the parser assembled from the command modules, and
``main``, which runs one command and turns its errors into one line and an exit code.

The commands live in :mod:`flows.commands`: run, serve and plan (:mod:`~flows.commands.run`),
query, stats, card and export sft (:mod:`~flows.commands.data`), export harbor and
check-harbor (:mod:`~flows.commands.harbor`), solve and export preference
(:mod:`~flows.commands.solve`), import and export atif (:mod:`~flows.commands.atif`),
check-ecosystem (:mod:`~flows.commands.ecosystem`), repair and vacuum
(:mod:`~flows.commands.repair`).

Commands that run no flow never import Prefect or Docker.  Bad input ends with one line
``taskfactory: error: ...`` on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Iterator

from flows.commands.arguments import add_quiet_option
from flows.commands.data import add_dataset_parsers, add_sft_export_parser
from flows.commands.help import command, commands, document
from flows.commands.run import add_plan_parser, add_run_parser, add_serve_parser
from flows.commands.usage import UsageError, one_line
from flows.run.progress import QUIET

EXIT_USAGE = 2
EXIT_CORRUPT = 3
"""The command answered from the intact shards only: corrupt ones were left out."""
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _export_parsers(sub: argparse._SubParsersAction) -> None:
    """``export`` and its targets: sft, harbor, preference and atif."""
    export = sub.add_parser("export", help="export the dataset for other tools: sft (JSONL "
                            "for trainers), harbor (task folders), preference (DPO pairs), "
                            "atif (trajectories in Harbor's trajectory format)")
    targets = export.add_subparsers(dest="target", required=True, parser_class=_Parser)
    from flows.commands import atif
    from flows.commands.harbor import add_export_parser
    from flows.commands.solve import add_preference_parser

    add_sft_export_parser(targets)
    add_export_parser(targets)
    add_preference_parser(targets)
    atif.add_export_parser(targets)


@functools.cache  # built once per process: parsing leaves it unchanged
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="taskfactory")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_run_parser(sub)
    add_dataset_parsers(sub)
    add_plan_parser(sub)
    _export_parsers(sub)
    from flows.commands import atif
    from flows.commands.ecosystem import add_check_ecosystem_parser
    from flows.commands.harbor import add_check_parser
    from flows.commands.repair import add_repair_parsers
    from flows.commands.solve import add_solve_parser

    atif.add_import_parser(sub)
    add_solve_parser(sub)
    add_check_parser(sub)
    add_check_ecosystem_parser(sub)
    add_repair_parsers(sub)
    add_serve_parser(sub)
    for name in ("run", "solve", "check-harbor", "export harbor", "repair"):  # show progress
        add_quiet_option(commands(parser)[name][0])
    document(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code, or :data:`EXIT_CORRUPT` when it succeeded but had to
    leave corrupt shards out (each was named on stderr with the repair command).  SIGTERM
    stops a command as Ctrl-C does: what it started is stopped, one line, exit 130."""
    from environments.ecosystems.code import TRUST
    from tasks.dataset import DatasetError
    from tasks.dataset.store.checksums import take_excluded

    take_excluded()
    with _terminate_as_interrupt():
        try:
            argv = sys.argv[1:] if argv is None else argv
            if not argv:  # the usage on stdout, the one error line on stderr: exit 2
                print(build_parser().format_help())
                raise UsageError(f"no command given; pick one above (`{command()} COMMAND "
                                 "--help` says what it does)")
            args = build_parser().parse_args(argv)
            with _env(TRUST, getattr(args, "trust_ecosystem", False)), \
                    _env(QUIET, getattr(args, "quiet", False)):
                code = args.func(args)
            return EXIT_CORRUPT if code == 0 and take_excluded() else code
        except UsageError as exc:
            print(f"taskfactory: error: {one_line(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        except DatasetError as exc:  # 2, or 75 for a full disk
            print(f"taskfactory: error: {one_line(str(exc))}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("taskfactory: interrupted; nothing was left running", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0


@contextlib.contextmanager
def _env(name: str, on: bool) -> Iterator[None]:
    """``name`` set to 1 for as long as the command runs, when ``on`` (``main`` may be
    called again): ``--trust-ecosystem`` (user ecosystem code runs unsandboxed in this
    process and what it starts) and ``--quiet`` (no progress line)."""
    if not on:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
