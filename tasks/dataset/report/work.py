"""How much work a task asks, per ecosystem (a stack is one), kind and tier (``--difficulty``;
tasks made before tiers are ``medium``): the medians of its
steps, of the values it must look up, of its trajectories' turns, of its seeded state,
and the share that needs observation.

A *looked-up value* is a value a read step prints that a later step takes (the customer
with the most orders, the branch with the oldest tip): the solver must find it before it
can act (counted as the planner counts them, :func:`tasks.plan.lookups.looked_up`).  Reads
are known from the ecosystem's spec, so only built-in ecosystems and stacks of them are
counted (``-`` for a user's).  The seeded state is the number of entries the verifier
checks stay as they are (``unchanged`` checks).  Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
from collections import defaultdict
from statistics import median

import duckdb

from environments.ecosystems import Ecosystem, builtin_named
from tasks.dataset.report.compositions import stream_rows
from tasks.plan.lookups import looked_up

COLUMNS = ["ecosystem", "kind", "tier", "tasks", "median steps", "median looked-up values",
           "median turns", "median seeded entries", "need observation %"]
NOTE = ("A looked-up value is one a read step prints and a later step takes (the solver "
        "finds it before it acts; built-in ecosystems only).  Turns: the messages of the "
        "task's trajectories; seeded entries: those the verifier checks stay as they are.")


def work_rows(con: duckdb.DuckDBPyConnection) -> list[list[object]]:
    """Per ecosystem, kind and tier: :data:`COLUMNS`."""
    turns = dict(con.execute("select task_id, median(n_turns) from trajectories "
                             "group by task_id").fetchall())
    ecosystems: dict[str, Ecosystem | None] = {}
    groups: dict[tuple[str, str, str], list[tuple]] = defaultdict(list)
    for task_id, name, kind, tier, n_steps, graph_json, checks_json, observed in stream_rows(
            con, "select task_id, ecosystem, coalesce(kind, 'build'), coalesce(tier, 'medium'), "
                 "n_steps, graph_json, checks_json, needs_observation from tasks"):
        if name not in ecosystems:
            ecosystems[name] = builtin_named(name)
        eco = ecosystems[name]
        lookups = looked_up(eco, json.loads(graph_json)) if eco else None
        seeded = sum(len(c.get("expected") or {}) for c in json.loads(checks_json)
                     if c.get("kind") == "unchanged")
        groups[(name, kind, tier)].append((n_steps, lookups, turns.get(task_id), seeded,
                                           observed))
    return [[*key, len(rows), *(_median([r[i] for r in rows]) for i in range(4)),
             _share([r[4] for r in rows])] for key, rows in sorted(groups.items())]


def _median(values: list) -> object:
    known = [v for v in values if v is not None]
    return round(median(known), 1) if known and len(known) == len(values) else "-"


def _share(flags: list) -> str:
    known = [f for f in flags if f is not None]
    return f"{100 * sum(known) / len(known):.1f}%" if known else "-"
