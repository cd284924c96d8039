"""The commands that plan and run the factory: ``run`` (a one-off flow run, or ``--resume``
of one), ``serve`` (the flow on a cron schedule) and ``plan`` (graphs only, nothing run).

Each turns its options into checked :class:`flows.settings.RunSettings` first: a bad
value, an ecosystem that cannot give the kinds asked of it or a dataset folder that
cannot be written is one line and exit code 2, before anything starts or is written.
Only then does ``run`` start Prefect (and its temporary server) and the engine.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args, get_origin

from flows.commands.arguments import add_trust_option, number, path, text, whole
from flows.commands.help import command
from flows.commands.usage import UsageError, option_error

if TYPE_CHECKING:
    from flows.run.summary import RunSummary

EXIT_ERRORED = 75  # EX_TEMPFAIL: the infrastructure failed under some candidates; resume
EXAMPLE_QUERY = ("select ecosystem, avg((status = 'accepted')::int) as yield, "
                 "avg((status = 'accepted' and len(repairs) = 0)::int) as yield_without_repair "
                 "from attempts group by ecosystem")

RUN_OUTPUT_OPTIONS = ["tasks", "seed", "backend", "ecosystem", "depth_weights", "max_depth",
                      "kinds", "off_scenario", "stack_share", "difficulty", "no_repair"]
"""Run options that --resume takes from the recorded run instead, besides every flag of the
candidate's settings."""


@contextlib.contextmanager
def hold_for_run(data: Path) -> Iterator[None]:
    """Hold ``data``'s writer lock for a run (unless this process holds it already), lent
    to the flow the run starts (which re-enters it), and make the checks every writer
    makes: a dataset another process writes, or one that is corrupt or holds shards its
    manifest cannot account for, raises DatasetError before anything is written."""
    from tasks.dataset import Dataset

    dataset = Dataset(data)
    with contextlib.ExitStack() as stack:
        if not dataset.holds_lock():
            stack.enter_context(dataset.lock(lend=True))
        with dataset.writable():
            pass
        yield


def resume_settings(args: argparse.Namespace):
    """(run id, settings) of the run that ``--resume`` continues."""
    from flows.settings import RunSettings
    from tasks.dataset import Dataset, DatasetError
    from tasks.stages.settings import CandidateSettings

    given = [f"--{o.replace('_', '-')}" for o in [*RUN_OUTPUT_OPTIONS,
                                                  *CandidateSettings.model_fields]
             if getattr(args, o) not in (None, False)]
    if given:
        raise UsageError(f"--resume continues a run with its recorded settings; drop "
                         f"{', '.join(given)}")
    if not (args.data / "_manifest.json").exists():
        raise UsageError(f"--resume: no dataset at {args.data}; start a run without --resume")
    try:
        run_id, recorded = Dataset(args.data).resumable(
            None if args.resume is True else args.resume)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    return run_id, RunSettings.model_validate(
        {**recorded, "data": args.data, "workers": args.workers or recorded["workers"],
         "shard_rows": args.shard_rows or recorded["shard_rows"]})


def _ecosystem(ref: str):
    from environments.ecosystems import EcosystemError, load_ecosystem

    try:
        return load_ecosystem(ref)
    except EcosystemError as exc:
        raise UsageError(str(exc)) from None


def _ecosystem_refs(args: argparse.Namespace) -> list[str]:
    """The ``--ecosystem`` values (repeatable, comma-separated), or every built-in ecosystem
    and stack."""
    from environments.ecosystems import builtin_names, default_refs

    if not args.ecosystem:
        return default_refs()
    refs = [r.strip() for value in args.ecosystem for r in value.split(",") if r.strip()]
    if not refs:
        raise UsageError(f"--ecosystem {args.ecosystem[0]!r} names no ecosystem; give a "
                         f"built-in name ({', '.join(builtin_names())}) or a folder")
    return refs


def _validated(options: dict[str, str], **given: object):
    """RunSettings of the fields the command line ``given`` (None: not given, the model's
    default), each checked against the model's bounds: a problem is one line naming the
    option (``options``: field -> option where the names differ)."""
    from pydantic import ValidationError

    from flows.settings import RunSettings

    try:
        return RunSettings.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        raise option_error(exc, {"ecosystems": "--ecosystem", **options}) from None


def _settings(args: argparse.Namespace):
    from tasks.dataset import Dataset
    from tasks.dataset.store.paths import check_writable

    settings = _validated(
        {}, tasks=args.tasks, seed=args.seed, data=args.data, backend=args.backend,
        ecosystems=_ecosystem_refs(args), workers=args.workers,
        depth_weights=_depth_weights(args), **_mix(args), off_scenario=args.off_scenario,
        stack_share=args.stack_share, shard_rows=args.shard_rows, difficulty=args.difficulty,
        **{**_candidate_flags(args), **({"max_repairs": 0} if args.no_repair else {})})
    ecos = [_ecosystem(ref) for ref in settings.ecosystems]
    names = [eco.name for eco in ecos]
    if len(set(names)) != len(names):
        raise UsageError(f"two ecosystems share a name ({', '.join(names)}); rename one in its "
                         "ecosystem.yaml")
    notes = _check_mix(settings, ecos)
    notes += [f"warning: ecosystem {eco.name} declares no discovery: its trajectories inspect "
              "nothing before they act (add `discovery:` to its ecosystem.yaml, see "
              "docs/ecosystem-reference.md)" for eco in ecos if not eco.spec.discovery]
    check_writable(args.data, "the dataset to --data")  # StorageError: one line, nothing created
    Dataset(args.data).manifest()  # a newer or unreadable dataset: one line, exit 2
    _tell(notes)
    return settings


def _tell(notes: list[str]) -> None:
    """Notes and warnings on stderr, once nothing can refuse the command any more (a
    refused command prints its one error line only)."""
    for note in notes:
        print(note, file=sys.stderr)


def _depth_weights(args: argparse.Namespace) -> dict[int, float] | None:
    """The ``--depth-weights`` given (None: the default), without the depths beyond
    ``--max-depth``."""
    from flows.settings import up_to_depth
    from tasks.plan.planner import DEFAULT_DEPTH_WEIGHTS, parse_depth_weights

    try:
        weights = (parse_depth_weights(args.depth_weights) if args.depth_weights is not None
                   else dict(DEFAULT_DEPTH_WEIGHTS))
    except ValueError as exc:
        raise UsageError(f"--depth-weights: {exc}") from None
    if args.max_depth is None:
        return weights if args.depth_weights is not None else None
    try:
        return up_to_depth(weights, args.max_depth)
    except ValueError as exc:
        raise UsageError(f"--max-depth: {exc}") from None


def _mix(args: argparse.Namespace) -> dict:
    """``kinds`` and ``where_possible`` of ``--kinds`` (none: the model's defaults)."""
    from tasks.plan.mix import parse_mix

    if args.kinds is None:
        return {}
    try:
        kinds, where_possible = parse_mix(args.kinds)
    except ValueError as exc:
        raise UsageError(f"--kinds: {exc}") from None
    return {"kinds": kinds, "where_possible": where_possible}


def _check_mix(settings, ecos: list) -> list[str]:  # noqa: ANN001
    """No silent downgrade: a kind or property asked of an ecosystem that cannot give it is
    one line naming what to add (UsageError); one asked where possible is a note, returned
    for :func:`_tell`."""
    from environments.ecosystems import EcosystemError
    from tasks.plan.lookups import lookup_gap
    from tasks.plan.mix import downgraded, unavailable
    from tasks.plan.tiers import TIER_RULES

    notes = []
    for eco in ecos:
        rules = TIER_RULES[settings.difficulty]
        try:
            eco.check_scale(rules.scale)
        except EcosystemError as exc:
            raise UsageError(str(exc)) from None
        if rules.min_lookups and (gap := lookup_gap(eco, rules.min_lookups)):
            raise UsageError(gap)
        gaps = unavailable(eco, settings.kinds, settings.where_possible,
                           getattr(settings, "require_observation", False))
        if gaps:
            raise UsageError(gaps[0])
        notes += [f"note: {note}" for note in downgraded(eco, settings.kinds)]
    return notes


def cmd_run(args: argparse.Namespace) -> int:
    from tasks.dataset import Dataset
    from tasks.dataset.store.folder import check_dataset
    from tasks.dataset.store.lock import LOCK

    _check_runner(args)
    check_dataset(args.data, missing_ok=True)  # a folder the factory did not make: refused
    with contextlib.ExitStack() as hold:
        if (args.data / LOCK).is_file():  # an existing dataset: lock it before anything else
            hold.enter_context(Dataset(args.data).lock(lend=True))
        run_id, settings = resume_settings(args) if args.resume else (None, _settings(args))
        return _run(args, run_id, settings, hold)


def _run(args: argparse.Namespace, run_id: str | None, settings,  # noqa: ANN001
         hold: contextlib.ExitStack) -> int:
    """The run, once its input is checked; ``hold`` keeps the dataset lock until it ends."""
    from environments.docker.config import docker_available
    from tasks.dataset.store.errors import StorageError

    backend = settings.backend
    if backend != "local" and not docker_available():
        if backend == "docker":
            raise UsageError("--backend docker: no Docker daemon answers; start one "
                             "(make engine) or use --backend local")
        print("warning: no Docker daemon answers; using the local backend "
              "(weaker isolation)", file=sys.stderr)
        backend = "local"
    backend = "docker" if backend == "auto" else backend
    def left_out(message: str) -> None:
        if args.ecosystem or args.resume:  # named explicitly: each one must run here
            raise UsageError(f"{message} (is a Docker daemon running?)")
        print(f"warning: {message}", file=sys.stderr)

    settings = settings.runnable_on(backend, left_out)
    from flows.commands.api_server import quiet_prefect, server_unless_configured

    quiet_prefect()
    server = server_unless_configured()
    from environments.ecosystems.usercode import UserCodeError
    from flows.commands.api_server import ServerError
    from flows.factory import plan_ahead, run_factory
    from flows.run.providers import close_run
    from tasks.dataset.provenance import new_run_id
    from tasks.plan.planner import PlanningError

    resume = run_id is not None
    run_id = run_id or new_run_id()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1`: where it is stuck
    try:
        plan_ahead(settings)  # a seed failing while planning: one line, nothing written
        hold.enter_context(hold_for_run(settings.data))  # before Prefect starts
        if server is not None:
            server.wait_ready(float(os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]))
        summary = run_factory(_here(settings), run_id=run_id, resume=resume,
                              runner=args.runner, address=args.address)
    except KeyboardInterrupt:
        removed = close_run(run_id)
        print(f"interrupted: run {run_id} stopped, {removed} sandboxes removed; continue it "
              f"with `{command()} run --resume --data {settings.data}`", file=sys.stderr)
        return 130
    except StorageError as exc:  # the disk refused a write: the run is marked failed
        fix = "free space on its disk" if exc.exit_code == EXIT_ERRORED else "make it writable"
        raise StorageError(f"{exc.problem}; run {run_id} stopped; {fix}, then continue it with "
                           f"`{command()} run --resume --data {settings.data}`",
                           exc.exit_code) from None
    except (PlanningError, UserCodeError) as exc:
        raise UsageError(f"planning failed: {exc}; fix the ecosystem") from None
    except ServerError as exc:
        raise UsageError(str(exc)) from None
    return _report(summary, settings.data, resume)


def _report(summary: RunSummary, data: Path, resume: bool) -> int:
    """Print what a run did; its exit code."""
    if summary.skipped == summary.candidates and not resume:
        print(f"run {summary.run_id}: nothing to do: all {summary.candidates} candidates of "
              f"this config (hash {summary.config_hash}) are already in {data}; "
              "nothing written")
        return 0
    rejected = ", ".join(f"{k}={v}" for k, v in sorted(summary.rejected.items())) or "none"
    ran = summary.candidates - summary.skipped
    print(f"run {summary.run_id}: {summary.accepted}/{ran} candidates accepted "
          f"on the {summary.backend} backend in {summary.seconds:.1f} s "
          f"({summary.accepted_without_repair} without repair)"
          + (f"; {summary.skipped} already in the dataset, skipped" if summary.skipped else "")
          + ("; resumed" if resume else ""))
    for name, y in summary.ecosystems.items():
        bare = y.accepted_without_repair
        print(f"  {name:<12} {y.accepted:>5}/{y.candidates:<5} accepted "
              f"{_share(y.accepted, y.candidates):>7}   without repair "
              f"{bare:>5} {_share(bare, y.candidates):>7}")
    print(f"rejected: {rejected} (duplicates: {summary.duplicates})")
    if summary.errored:
        print(f"errored: {summary.errored} candidates, stopped by the infrastructure (engine "
              "or Prefect API), not rejected; the run is unfinished: run them again with "
              f"`{command()} run --resume --data {data}`")
    print(f"dataset: {data}/ (tables: tasks, trajectories, steps, attempts, runs; "
          f"card: {data}/README.md)")
    print(f'try: {command()} query "{EXAMPLE_QUERY}" --data {data}')
    return EXIT_ERRORED if summary.errored else 0


def _here(settings):
    """``settings`` with ``--data`` made absolute: relative to where the command was typed,
    whatever the flow's TASKFACTORY_HOME says."""
    return settings.model_copy(update={"data": settings.data.absolute()})


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _check_runner(args: argparse.Namespace) -> None:
    if args.address and args.runner != "dask":
        raise UsageError("--address goes with --runner dask")
    if args.address and not args.address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise UsageError(f"--address {args.address!r}: expected a Dask scheduler address "
                         "like tcp://host:8786")


def cmd_plan(args: argparse.Namespace) -> int:
    from environments.ecosystems.usercode import UserCodeError
    from tasks.plan.diversity import diversity, format_report
    from tasks.plan.planner import PlanningError, plan_candidates

    settings = _validated({"tasks": "--n"}, tasks=args.n, seed=args.seed,
                          ecosystems=[args.ecosystem], depth_weights=_depth_weights(args),
                          **_mix(args), off_scenario=args.off_scenario,
                          difficulty=args.difficulty)
    eco = _ecosystem(args.ecosystem)
    notes = _check_mix(settings, [eco])
    try:
        candidates, stats = plan_candidates(eco, settings.tasks, settings.seed,
                                            settings.depth_weights, settings.kinds,
                                            settings.off_scenario, settings.difficulty)
    except (PlanningError, UserCodeError) as exc:
        raise UsageError(str(exc)) from None
    _tell(notes)
    report = diversity(eco, candidates, stats.duplicates_replanned, settings.depth_weights)
    print(report.model_dump_json(indent=2) if args.format == "json" else format_report(report))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from tasks.dataset.store.folder import check_dataset

    check_dataset(args.data, missing_ok=True)
    settings = _settings(args)
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=args.cron)  # Prefect's own rule, before anything is served
    except ValidationError:
        raise UsageError(f"--cron {args.cron!r} is not a cron schedule; give five fields "
                         "like '0 3 * * *' (minute hour day month weekday)") from None
    return _serve(settings, args.name, args.cron)


def _serve(settings, name: str, cron: str) -> int:  # noqa: ANN001
    """Serve the checked settings until stopped."""
    from flows.commands.api_server import quiet_prefect

    quiet_prefect()
    from prefect.types.entrypoint import EntrypointType

    from flows.factory import factory

    # a module entrypoint, as in deploy/prefect.yaml: Dask workers import the tasks by it
    factory.serve(name=name, cron=cron, entrypoint_type=EntrypointType.MODULE_PATH,
                  parameters={"settings": _here(settings).model_dump(mode="json")})
    return 0


def add_plan_parser(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser("plan", help="plan graphs and report their diversity (runs nothing)")
    plan.add_argument("--ecosystem", default="files", help="built-in name or folder")
    plan.add_argument("--n", type=whole, default=1000, help="graphs to plan")
    plan.add_argument("--seed", type=whole, default=0)
    plan.add_argument("--depth-weights", metavar="D:W,...")
    plan.add_argument("--max-depth", type=whole)
    plan.add_argument("--kinds", metavar="KIND:W,...")
    plan.add_argument("--off-scenario", type=number, metavar="0..1")
    difficulty_option(plan)
    plan.add_argument("--format", choices=["text", "json"], default="text")
    add_trust_option(plan)
    plan.set_defaults(func=cmd_plan)


def difficulty_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--difficulty", choices=["easy", "medium", "hard"],
                   help="easy: short workflows; medium (default): the usual mix; hard: deep "
                        "workflows with three or more values to look up, over a seeded state "
                        "ten times the size, build tasks only, each failed by the open-loop "
                        "solver (docs/difficulty.md)")


def run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", type=whole, help="candidates to plan and run (default 20)")
    p.add_argument("--seed", type=whole, help="run seed (default 0)")
    p.add_argument("--data", type=path, default=Path("data"), help="dataset folder")
    p.add_argument("--backend", choices=["auto", "docker", "local"],
                   help="default auto: docker when a daemon answers, else local")
    p.add_argument("--ecosystem", action="append", metavar="NAME|DIR|STACK",
                   help="built-in name, folder, or a stack (names joined by +, like "
                        "files+git+sql, or a stack file); repeat or comma-separate for "
                        "several (default: every built-in ecosystem and stack)")
    p.add_argument("--stack-share", type=number, metavar="0..1",
                   help="share of candidates for the stacks when the run names stacks and "
                        "single ecosystems both (default 0.3)")
    p.add_argument("--workers", type=whole, help="candidates executed at once (default 4)")
    difficulty_option(p)
    p.add_argument("--depth-weights", metavar="D:W,...",
                   help="relative weight per workflow depth 1..8 (default 1:1,2:2,3:3,4:3,"
                        "5:2,6:2,7:1,8:1)")
    p.add_argument("--max-depth", type=whole, help="drop deeper workflows (1..8)")
    p.add_argument("--kinds", metavar="KIND:W,...",
                   help="relative weight per task kind: build (new artifacts), fix (repair "
                        "a planted fault first) and reconstruct (write the program behind a "
                        "workflow, judged on hidden cases); a ? after a kind asks for it "
                        "where possible (fix?:1: build tasks where the ecosystem has no "
                        "fault injectors); default build:2,fix?:1")
    p.add_argument("--off-scenario", type=number, metavar="0..1",
                   help="share of candidates planned outside the ecosystem's scenarios "
                        "(default 0.1); the rest serve one scenario each and say why")
    _candidate_options(p)
    p.add_argument("--no-repair", action="store_true", help="turn repair off (= --max-repairs 0)")
    add_trust_option(p)
    p.add_argument("--shard-rows", type=whole,
                   help="rows per table that trigger a shard commit (default 500)")


def _candidate_options(p: argparse.ArgumentParser) -> None:
    """A flag per field of the candidate's settings, its help, bounds, choices and default
    read from the model (:class:`tasks.stages.settings.CandidateSettings`)."""
    from tasks.stages.settings import CandidateSettings

    for name, spec in CandidateSettings.model_fields.items():
        flag, about = f"--{name.replace('_', '-')}", spec.description or ""
        if spec.annotation is bool:
            p.add_argument(flag, action="store_true", help=about)
        elif get_origin(spec.annotation) is Literal:
            p.add_argument(flag, choices=get_args(spec.annotation),
                           help=f"{about} (default {spec.default})")
        else:
            bounds = {type(m).__name__: m for m in spec.metadata}
            low, high = getattr(bounds.get("Ge"), "ge", None), getattr(bounds.get("Le"), "le", None)
            p.add_argument(flag, type=whole, help=f"{about} (default {spec.default})",
                           metavar=f"{low}..{high}" if low is not None and high is not None
                           else None)


def _candidate_flags(args: argparse.Namespace) -> dict[str, object]:
    """The candidate settings' flags as given (an unset flag: None or False)."""
    from tasks.stages.settings import CandidateSettings

    return {name: getattr(args, name) for name in CandidateSettings.model_fields}


def add_run_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="generate tasks in a one-off flow run")
    run_options(run)
    run.add_argument("--resume", nargs="?", const=True, metavar="RUN_ID",
                     help="continue an interrupted run (default: the newest) with its "
                          "recorded settings")
    run.add_argument("--runner", choices=["threads", "dask"], default="threads",
                     help="where candidates run: a thread pool here, or a Dask cluster")
    run.add_argument("--address", metavar="tcp://HOST:PORT",
                     help="the Dask scheduler (default with --runner dask: a local cluster)")
    run.set_defaults(func=cmd_run)


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve the flow on a cron schedule")
    run_options(serve)
    serve.set_defaults(resume=None)
    serve.add_argument("--cron", type=text, default="0 3 * * *")
    serve.add_argument("--name", type=text, default="taskfactory-nightly")
    serve.set_defaults(func=cmd_serve)
