"""``taskfactory stats``: a dataset report built from independent sections.

A section is a function from a DuckDB connection (the views of :func:`tasks.dataset.query.connect`)
to a markdown fragment (a ``##`` heading and a table).  :data:`SECTIONS` lists them in
report order; adding one is one line.  The terminal, the Prefect markdown artifact and
the dataset card all use :func:`report`.  Imports neither Prefect nor Docker.

Token counts are approximate: characters of message text (content, reasoning, tool call
names and arguments) divided by 4, the usual rule of thumb for English and code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from tasks.dataset.report.compositions import (
    CAUGHT_COLUMNS,
    COLUMNS,
    NOTE,
    caught_rows,
    composition_rows,
)
from tasks.dataset.report.rollouts import DIFFICULTY, PASS_BY_TIER, REWARD_HACKS, STOP_REASONS
from tasks.dataset.runs import SETTLED_ATTEMPTS

Section = Callable[[duckdb.DuckDBPyConnection], str]

TRAJECTORY_TOKENS = """
    select trajectory_id, (list_sum(list_transform(messages, lambda m:
        length(m.content) + coalesce(length(m.reasoning_content), 0)
        + coalesce(list_sum(list_transform(m.tool_calls, lambda c:
            length(c.function.name) + length(c.function.arguments))), 0))) / 4)::int as tokens
    from trajectories"""
"""Per trajectory, row by row (no join or aggregate over the table: memory stays flat)."""


def md_table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table (``(none)`` when there are no rows)."""
    if not rows:
        return "(none)"

    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
        return "" if v is None else str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _section(con: duckdb.DuckDBPyConnection, title: str, sql: str, note: str = "") -> str:
    cur = con.execute(sql)
    columns = [d[0] for d in cur.description]
    body = md_table(columns, cur.fetchall())
    return f"## {title}\n\n{note + chr(10) + chr(10) if note else ''}{body}"


def overview(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Overview", """
        select (select count(*) from runs) as runs_complete,
               (select count(distinct run_id) from attempts) as runs_with_attempts,
               (select count(*) from attempts) as attempts,
               (select count(*) from tasks) as tasks,
               (select count(*) from trajectories) as trajectories,
               (select count(*) from steps) as steps,
               (select string_agg(distinct schema_version::varchar, ', ') from attempts)
                   as schema_versions""")


def yield_by_ecosystem(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Yield per ecosystem", f"""
        select ecosystem, count(*) as candidates,
               count(*) filter (status = 'accepted') as accepted,
               round(100 * avg((status = 'accepted')::int)
                   filter (status <> 'errored'), 1) as "yield %",
               round(100 * avg((status = 'accepted' and len(repairs) = 0)::int)
                   filter (status <> 'errored'), 1) as "yield without repair %",
               count(*) filter (stage = 'dedup') as duplicates,
               count(*) filter (status = 'errored') as errored
        from {SETTLED_ATTEMPTS} group by all order by ecosystem""",
        "Yield counts accepted and rejected candidates; `errored` ones (the infrastructure "
        "failed under them) are neither, until a resume or rerun runs them again.")


def tiers(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Tiers", f"""
        select coalesce(a.tier, 'medium') as tier, count(*) as candidates,
               count(*) filter (status = 'accepted') as accepted,
               round(100 * avg((status = 'accepted')::int)
                   filter (status <> 'errored'), 1) as "yield %",
               median(t.n_steps) as "median steps",
               round(100 * avg(t.needs_observation::int), 1) as "open-loop fails %"
        from {SETTLED_ATTEMPTS} a
        left join (select distinct on (candidate_id) candidate_id, n_steps, needs_observation
                   from tasks) t using (candidate_id)
        group by all order by tier""",
        "Candidates and tasks per `--difficulty`; tasks made before tiers are `medium`.  "
        "Open-loop fails: the accepted tasks that the solver who looks nothing up fails "
        "(every hard task must).  Looked-up values, turns and seeded entries per tier are "
        "under \"Work per task\".")


def kinds(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Task kinds, per ecosystem", f"""
        select coalesce(kind, 'build') as kind, ecosystem, count(*) as candidates,
               count(*) filter (status = 'accepted') as accepted,
               round(100 * avg((status = 'accepted')::int), 1) as "yield %",
               round(100 * count(*) filter (status = 'accepted')
                   / sum(count(*) filter (status = 'accepted')) over (), 1) as "share of tasks %"
        from {SETTLED_ATTEMPTS} where status <> 'errored' group by all order by all""",
        "`build` tasks make new artifacts from a healthy seeded state; `fix` tasks start from a "
        "planted fault that they repair first; `reconstruct` tasks ask for the program behind "
        "a workflow, judged on hidden initial states.  Candidates from before kinds existed "
        "count as `build`.")


def reconstruct(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Reconstruct tasks: cases and verifier levels", """
        select ecosystem, count(*) as tasks,
               min(public_cases) as "public min", round(avg(public_cases), 1) as "public avg",
               min(hidden_cases) as "hidden min", round(avg(hidden_cases), 1) as "hidden avg",
               count(*) filter (gate.reference_reward = 1) as "reference 1",
               count(*) filter (gate.memorizer_reward < 1) as "memorizer < 1",
               count(gate.hardcoded_reward) as "hardcoded run",
               count(*) filter (gate.hardcoded_reward = 0) as "hardcoded 0",
               count(*) filter (gate.partial_reward < 1) as "partial < 1"
        from tasks where kind = 'reconstruct' group by all order by all""",
        "Each task's verifier judges the program on its hidden cases in three levels: "
        "structure (the program exists, exits 0 within its time limit on every case), "
        "semantics (every output right on every case, under the probe sections' compare "
        "modes) and anti-shortcut (its outputs vary with its input); the reward is 1 only "
        "when every hidden case is right.  The gate's controls: the reference program "
        "(must score 1), a memorizer copying a public example's expected output, the "
        "reference with each choice (the file with the most lines...) replaced by the entry "
        "it found in the first example, where the program makes one, and the reference "
        "minus its last mutating step, or its last step when it only reads (all must score "
        "below 1).")


def faults(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Fix tasks, per fault injector", f"""
        select ecosystem, json_extract_string(graph_json, '$.fault') as fault,
               count(*) as candidates, count(*) filter (status = 'accepted') as accepted,
               round(100 * avg((status = 'accepted')::int), 1) as "yield %"
        from {SETTLED_ATTEMPTS} where status <> 'errored' and kind = 'fix'
        group by all order by all""")


def scenarios(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Scenarios, per ecosystem", f"""
        select ecosystem, coalesce(scenario, '(none)') as scenario, count(*) as candidates,
               count(*) filter (status = 'accepted') as accepted,
               count(*) filter (status = 'accepted' and kind = 'fix') as "accepted fix",
               round(100 * avg((status = 'accepted')::int), 1) as "yield %",
               round(100 * count(*) filter (status = 'accepted') / sum(count(*) filter (
                   status = 'accepted')) over (partition by ecosystem), 1)
                   as "share of ecosystem's tasks %"
        from {SETTLED_ATTEMPTS} where status <> 'errored' group by 1, 2 order by 1, 2""",
        "A scenario is a piece of work the ecosystem declares (a release, a monthly report): "
        "its tasks use its tools and their instructions say why the work is done.  "
        "`(none)`: planned outside any scenario, or before scenarios existed.")


def stacks(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Stacks: tasks across ecosystems", """
        select ecosystem, count(*) as tasks, count(*) filter (crosses) as crossing,
               round(100 * avg(crosses::int), 1) as "crossing %",
               median(n_steps) as "median steps"
        from tasks where crosses is not null group by all
        union all
        select '(every task)', count(*), count(*) filter (crosses),
               round(100 * avg(coalesce(crosses, false)::int), 1), median(n_steps)
        from tasks having count(crosses) > 0
        order by 1""",
        "A stack puts ecosystems in one workspace (docs/stacks.md); a crossing task uses "
        "tools of two or more of them.  `(every task)`: the share of all accepted tasks, "
        "single ecosystems' included.")


def yield_by_stage(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Where candidates stop, per ecosystem and stage", f"""
        pivot (select ecosystem, stage from {SETTLED_ATTEMPTS} where status <> 'errored')
        on stage using count(*) group by ecosystem order by ecosystem""",
        "`accepted` passed every stage; the other columns count the rejections at a stage.")


def errored(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Errored (infrastructure, not task outcomes)", f"""
        select a.stage, a.reason, count(*) filter (s.candidate_id is null) as "run again",
               count(*) filter (s.candidate_id is not null) as "still errored"
        from attempts a left join (select candidate_id, created_at from {SETTLED_ATTEMPTS})
            s using (candidate_id, created_at)
        where a.status = 'errored' group by all order by all""",
        "Attempts the engine or the Prefect API failed; `run again`: superseded by a later "
        "attempt; `still errored`: `taskfactory run --resume` runs them again.")


def rejection_reasons(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Rejection reasons", """
        select stage, reason, count(*) as attempts,
               round(100 * count(*) / sum(count(*)) over (), 1) as "share %"
        from attempts where status = 'rejected' group by all
        order by attempts desc, stage, reason""")


def repairs(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Repairs", """
        select split_part(r, ' ', 1) as kind, count(*) as applied,
               count(distinct candidate_id) as candidates,
               count(distinct candidate_id) filter (status = 'accepted') as accepted_after
        from attempts, unnest(repairs) as u(r) group by all order by applied desc, kind""",
        "One row per repair kind; `accepted_after`: candidates accepted after that repair.")


def tools_never_succeeded(con: duckdb.DuckDBPyConnection) -> str:
    """Tools the planner drew that ran in no accepted task: each time, the tool failed and
    a repair replaced or dropped it, or the candidate was rejected."""
    columns = {d[0] for d in con.execute("select * from attempts limit 0").description}
    if "tools" not in columns or not con.execute(
            "select count(tools) from attempts").fetchone()[0]:  # type: ignore[index]
        return ("## Tools that never succeeded\n\nNot recorded: no attempt lists its "
                "planned tools (attempts before schema 3).")
    return _section(con, "Tools that never succeeded", """
        with planned as (
          select ecosystem, t as tool, count(distinct candidate_id) as "planned in",
                 count(distinct candidate_id) filter (status = 'accepted') as "accepted after"
          from attempts, unnest(tools) as u(t) where status <> 'errored' group by all),
        ran as (select distinct a.ecosystem, s.tool from steps s join attempts a using (task_id))
        select p.* from planned p anti join ran r using (ecosystem, tool)
        order by "planned in" desc, ecosystem, tool""",
        "Tools planned in a candidate that ran in no accepted task: every time they failed, "
        "and a repair replaced or dropped them (`accepted after`) or the candidate was "
        "rejected.  A tool listed here with many candidates is broken, not unlucky.")


def distributions(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Distributions", f"""
        with tok as ({TRAJECTORY_TOKENS}),
        d as (
          select 'depth' as measure, depth::double as v from tasks
          union all select 'steps per task', n_steps from tasks
          union all select 'turns per trajectory', n_turns from trajectories
          union all select 'tokens per trajectory', tokens from tok)
        select measure, count(*) as n, min(v) as min, quantile_cont(v, 0.5) as median,
               round(avg(v), 2) as mean, quantile_cont(v, 0.9) as p90, max(v) as max
        from d group by measure order by measure""",
        "Tokens ≈ characters of message text / 4.")


def observation(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Observation needed, per ecosystem", """
        select coalesce(ecosystem, 'all') as ecosystem, count(*) as tasks,
               count(needs_observation) as measured,
               count(*) filter (needs_observation) as "need observation",
               round(100 * avg(needs_observation::int), 1) as "need observation %",
               round(avg(gate.open_loop_reward), 3) as "mean open-loop reward"
        from tasks group by rollup (ecosystem) order by grouping(ecosystem), ecosystem""",
        "A task needs observation when its open-loop control (the reference solution with "
        "every value the instruction does not write replaced by a wrong one) scores below "
        "1; tasks gated before the control existed are not `measured` and not in the share.")


def soundness(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Soundness controls, per ecosystem", """
        with t as (
          select ecosystem, count(*) as tasks,
                 count(gate.vandal_reward) as vandal_run,
                 count(*) filter (gate.vandal_reward < 1) as vandal_fails,
                 count(gate.alternative_reward) as alternative_run,
                 count(*) filter (gate.alternative_reward = 1) as alternative_passes,
                 count(gate.hostile_reward) as hostile_run,
                 count(*) filter (gate.hostile_reward = 0) as hostile_zero
          from tasks group by rollup (ecosystem)),
        a as (
          select ecosystem, count(*) filter (reason = 'vandal_passed') as vandal_passed,
                 count(*) filter (reason = 'overspecified') as overspecified,
                 count(*) filter (reason = 'hackable') as hackable
          from attempts where status = 'rejected' group by rollup (ecosystem))
        select coalesce(t.ecosystem, 'all') as ecosystem, tasks,
               vandal_run as "vandal run", vandal_fails as "vandal fails",
               alternative_run as "alternative run",
               alternative_passes as "alternative passes",
               hostile_run as "hostile run", hostile_zero as "hostile 0",
               coalesce(vandal_passed, 0) as "rejected: vandal passed",
               coalesce(overspecified, 0) as "rejected: overspecified",
               coalesce(hackable, 0) as "rejected: hackable"
        from t left join a on t.ecosystem is not distinct from a.ecosystem
        order by t.ecosystem is null, t.ecosystem""",
        "Accepted tasks: the vandal control (the reference solution, then one change to a "
        "seeded entry the task leaves alone) must fail, and the alternative control (the "
        "solution with each step's alternative command) must pass, and the hostile "
        "control (an agent that only attacks the verifier) must score 0; the rejected "
        "columns count the candidates each turned away.  A control does not run where nothing "
        "declares `vandal` commands or `alternatives`, nor on tasks gated before it "
        "existed.")


def compositions(con: duckdb.DuckDBPyConnection) -> str:
    return (f"## Purposeless compositions, per ecosystem\n\n{NOTE}\n\n"
            + md_table(COLUMNS, composition_rows(con)) + "\n\n"
            + md_table(CAUGHT_COLUMNS, caught_rows(con)))


def readability(con: duckdb.DuckDBPyConnection) -> str:
    from tasks.dataset.report import readability as counted

    return (f"## Readability of instructions, per ecosystem and kind\n\n{counted.NOTE}\n\n"
            + md_table(counted.COLUMNS, counted.readability_rows(con)))


def work(con: duckdb.DuckDBPyConnection) -> str:
    from tasks.dataset.report import work as counted

    return (f"## Work per task, per ecosystem, kind and tier\n\n{counted.NOTE}\n\n"
            + md_table(counted.COLUMNS, counted.work_rows(con)))


def verbatim(con: duckdb.DuckDBPyConnection) -> str:
    from tasks.dataset.report import verbatim as counted

    return (f"## Arguments given verbatim, per ecosystem and kind\n\n{counted.NOTE}\n\n"
            + md_table(counted.COLUMNS, counted.verbatim_rows(con)))


def depth_histogram(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, "Tasks by depth and shape", """
        pivot (select depth, shape from tasks) on shape using count(*)
        group by depth order by depth""")


def stop_reasons(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, *STOP_REASONS)


def difficulty_histogram(con: duckdb.DuckDBPyConnection) -> str:
    """(none) without rollouts: DuckDB cannot pivot on an empty column."""
    if not (con.execute("select count(*) from difficulty").fetchone() or (0,))[0]:
        return f"## {DIFFICULTY[0]}\n\n(none)"
    return _section(con, *DIFFICULTY)


def pass_by_tier(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, *PASS_BY_TIER)


def reward_hacks(con: duckdb.DuckDBPyConnection) -> str:
    return _section(con, *REWARD_HACKS)


def instruction_diversity(con: duckdb.DuckDBPyConnection) -> str:
    from tasks.dataset.report.instructions import format_instruction_stats, instruction_stats

    text = format_instruction_stats(instruction_stats(con))
    return f"## Instructions and trajectories\n\n```\n{text.rstrip()}\n```"


SECTIONS: list[Section] = [
    overview,
    yield_by_ecosystem,
    tiers,
    kinds,
    reconstruct,
    faults,
    scenarios,
    stacks,
    work,
    yield_by_stage,
    rejection_reasons,
    errored,
    repairs,
    tools_never_succeeded,
    distributions,
    observation,
    soundness,
    compositions,
    readability,
    verbatim,
    depth_histogram,
    instruction_diversity,
    stop_reasons,
    difficulty_histogram,
    pass_by_tier,
    reward_hacks,
]


def report(con: duckdb.DuckDBPyConnection, sections: Sequence[Section] = SECTIONS) -> str:
    """Every section's markdown, in order, separated by blank lines."""
    return "\n\n".join(section(con).strip() for section in sections) + "\n"
