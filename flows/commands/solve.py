"""``taskfactory solve``: k attempts per task of an agent on an OpenAI-compatible endpoint;
``taskfactory export preference``: pairs of its attempts.

The input is checked before Prefect is imported (the dataset, ``--where``, the ecosystems,
a Docker engine); then the flow :func:`flows.solve.solve` runs once.  The API key comes
from ``TASKFACTORY_LLM_API_KEY`` or ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from flows.commands.arguments import add_trust_option, path, text
from flows.commands.usage import UsageError, option_error


def add_solve_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="run k attempts of an agent per task on an "
                                     "OpenAI-compatible endpoint; write rollouts")
    p.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    p.add_argument("--where", type=text, help="SQL condition on tasks (e.g. \"ecosystem = 'sql'\")")
    p.add_argument("--k", type=int, default=4, help="attempts per task (default 4)")
    p.add_argument("--base-url", type=text, required=True, help="the endpoint, e.g. http://host:8000/v1")
    p.add_argument("--model", type=text, required=True)
    p.add_argument("--action-space", choices=["terminal", "function"], default="terminal",
                   help="terminal: one bash tool; function: the ecosystem's tools")
    p.add_argument("--max-turns", type=int, default=30)
    p.add_argument("--command-timeout", type=float, default=60.0, metavar="S")
    p.add_argument("--time-limit", type=float, default=600.0, metavar="S",
                   help="wall-clock seconds per attempt")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, help="per reply")
    p.add_argument("--token-budget", type=int, default=5_000_000, help="over the whole solve")
    p.add_argument("--workers", type=int, default=4, help="attempts at once")
    p.add_argument("--ecosystem-dir", type=path, action="append", default=[],
                   help="folder of a user ecosystem the tasks use")
    add_trust_option(p)
    p.set_defaults(func=cmd_solve)


def add_preference_parser(targets: argparse._SubParsersAction) -> None:
    p = targets.add_parser("preference", help="DPO pairs (chosen/rejected) of a solved and a "
                                              "failed rollout of the same task")
    p.add_argument("--action-space", choices=["terminal", "function"], default="terminal")
    p.add_argument("--where", type=text, help="condition on tasks and difficulty")
    p.add_argument("--out", type=path, required=True, help="JSONL file to write")
    p.add_argument("--data", type=path, default=Path("data"))
    p.set_defaults(func=cmd_export_preference)


def cmd_export_preference(args: argparse.Namespace) -> int:
    from tasks.dataset.dataset import readable
    from tasks.exports.sft import ExportError
    from tasks.exports.sft.preference import export_preference

    try:
        with readable(args.data, keep=(ExportError,)):
            n = export_preference(args.data, args.out, args.action_space, args.where)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {n} preference pairs to {args.out}")
    return 0


def _settings(args: argparse.Namespace):  # noqa: ANN202 (imported lazily)
    from pydantic import ValidationError

    from flows.solve_settings import SolveSettings

    try:
        return SolveSettings(
            data=args.data.absolute(), where=args.where, k=args.k, base_url=args.base_url,
            model=args.model, action_space=args.action_space, max_turns=args.max_turns,
            command_timeout_s=args.command_timeout, wall_s=args.time_limit,
            temperature=args.temperature, max_tokens=args.max_tokens,
            token_budget=args.token_budget, workers=args.workers,
            ecosystem_dirs=args.ecosystem_dir)
    except ValidationError as exc:
        raise option_error(exc, {"command_timeout_s": "--command-timeout",
                                 "wall_s": "--time-limit", "ecosystem_dirs": "--ecosystem-dir"}
                           ) from None


def cmd_solve(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset
    from tasks.exports.harbor import HarborError
    from tasks.exports.harbor.source import selected_tasks

    Dataset.open(args.data).manifest()
    settings = _settings(args)
    try:
        chosen = selected_tasks(args.data, args.where, args.ecosystem_dir)
    except HarborError as exc:
        raise UsageError(str(exc)) from None
    return _solve(settings, len(chosen))


def _solve(settings, tasks: int) -> int:  # noqa: ANN001
    """Run the solve flow on the checked settings (``tasks`` of them)."""
    from environments.docker.config import docker_available
    from flows.commands.api_server import ServerError, quiet_prefect, server_unless_configured

    if not docker_available():
        raise UsageError("solve runs attempts in Docker sandboxes and no Docker daemon "
                         "answers; start one (make engine)")
    quiet_prefect()
    server = server_unless_configured()
    from flows.solve import solve

    try:
        if server is not None:
            server.wait_ready(float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]))
        summary = solve(settings)
    except KeyboardInterrupt:
        print(f"interrupted: the attempts that ended are in {settings.data}; run the same "
              "solve again for the rest", file=sys.stderr)
        return 130
    except ServerError as exc:
        raise UsageError(str(exc)) from None
    print(f"solve {summary.run_id}: {tasks} tasks x k={settings.k}: "
          f"{summary.written} attempts written, {summary.held} already held, "
          f"{summary.errored} errored (run solve again for those)")
    _print_pass_by_tier(settings.data)
    print(f"difficulty: taskfactory query --data {settings.data} \"select * from difficulty\"")
    return 75 if summary.errored else 0


def _print_pass_by_tier(data: Path) -> None:
    """pass@1 and pass@k per tier (``--difficulty``) and model, over every attempt held."""
    from tasks.dataset import Dataset
    from tasks.dataset.report.stats import pass_by_tier

    with Dataset.open(data).connect() as con:
        print(pass_by_tier(con))
