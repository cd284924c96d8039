"""``taskfactory export atif`` and ``taskfactory import atif``: parse, call
:mod:`tasks.exports.atif`, print.  Neither imports Prefect or Docker.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flows.commands.arguments import path, text
from flows.commands.usage import UsageError

EXPORT_HELP = ("trajectories (or --rollouts) as ATIF documents (Harbor's trajectory format): "
               "Harbor trial folders that `harbor view` serves, or JSONL")
VIEW_HINT = "browse them: harbor view {out}"


def add_export_parser(targets: argparse._SubParsersAction) -> None:
    p = targets.add_parser("atif", help=EXPORT_HELP, description=EXPORT_HELP)
    p.add_argument("--out", type=path, required=True,
                   help="trials: the folder to write job folders into; jsonl: the file")
    p.add_argument("--layout", choices=["trials", "jsonl"], default="trials",
                   help="trials: OUT/<job>/<trial>/agent/trajectory.json with Harbor's "
                        "config.json and result.json (default); jsonl: one document a line")
    p.add_argument("--rollouts", action="store_true",
                   help="the attempts of `taskfactory solve` (and imported ones) instead of "
                        "the trajectories: model, token usage, reward, verifier lines")
    p.add_argument("--supervision", choices=["masked", "full", "actobs", "all"], default="all",
                   help="trajectories of one supervision mode (default all)")
    p.add_argument("--action-space", choices=["function", "terminal", "all"], default="all",
                   help="one action space (default all)")
    p.add_argument("--where", type=text, help="condition on tasks and difficulty, e.g. "
                                   "\"pass_at_k < 0.75\"")
    p.add_argument("--data", type=path, default=Path("data"))
    p.set_defaults(func=cmd_export_atif)


def add_import_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="read results of other tools into the dataset")
    sources = p.add_subparsers(dest="source", required=True, parser_class=type(p))
    atif = sources.add_parser(
        "atif", help="ATIF trajectories of the dataset's tasks (Harbor trials of exported "
                     "tasks) into rollouts, with their rewards")
    atif.add_argument("src", type=path, metavar="SRC",
                      help="a folder of Harbor trials (<trial>/agent/trajectory.json), a "
                           "JSONL file of documents, or one document")
    atif.add_argument("--data", type=path, default=Path("data"))
    atif.set_defaults(func=cmd_import_atif)


def cmd_export_atif(args: argparse.Namespace) -> int:
    from tasks.dataset.dataset import readable
    from tasks.dataset.store.paths import check_writable
    from tasks.exports.atif import AtifError
    from tasks.exports.atif.export import AtifOptions, export_atif

    options = AtifOptions(args.layout, args.rollouts, args.supervision, args.action_space,
                          args.where)
    folder = args.out if args.layout == "trials" else args.out.parent
    try:
        with readable(args.data, keep=(AtifError,)):
            check_writable(folder, "to --out")  # StorageError: one line, nothing created
            counts = export_atif(args.data, args.out, options)
    except AtifError as exc:
        raise UsageError(str(exc)) from None
    parts = ", ".join(f"{job} {n}" for job, n in sorted(counts.items()))
    print(f"wrote {sum(counts.values())} ATIF documents to {args.out} ({parts})")
    if args.layout == "trials":
        print(VIEW_HINT.format(out=args.out))
    return 0


def cmd_import_atif(args: argparse.Namespace) -> int:
    from tasks.dataset.dataset import readable
    from tasks.exports.atif import AtifError
    from tasks.exports.atif.importer import import_atif

    try:
        with readable(args.data, keep=(AtifError,)):
            done = import_atif(args.data, args.src)
    except AtifError as exc:
        raise UsageError(str(exc)) from None
    models = ", ".join(f"{model} {n}" for model, n in sorted(done.added.items())) or "none"
    print(f"imported {sum(done.added.values())} rollouts ({models}) as run {done.run_id}; "
          f"{done.held} already held")
    if done.unrewarded:
        print(f"left out {len(done.unrewarded)} documents without a reward (errored trials, "
              f"as Harbor counts them), e.g. {done.unrewarded[0]}")
    print(f"difficulty: taskfactory query --data {args.data} \"select * from difficulty\"")
    return 0
