"""Instruction and trajectory statistics of a dataset, for ``taskfactory stats``.

Diversity is measured on the shards, not guessed: the share of distinct instruction
texts, the most common openings (the first words of the first line), and how often each
template variant was drawn (``tasks.template_id`` = ``style/layout/opener/closer``).  The
largest share of one *phrasing* is the largest share of any opener, closer or whole
template id — the layout is formatting, not wording.

The audit re-checks what the pipeline enforced, from the shards alone: every task's
instruction still holds each of its ``instruction_literals`` as a code span (tasks written
before these columns existed count as not re-checked: template ``unknown``), and every
trajectory is grounded (terminal calls are checked with the values of the matching
function-view call that are looked up, :func:`tasks.rules.grounding.checked_values`).
Rejections come from ``attempts``.

Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import duckdb
from pydantic import BaseModel

from schemas.records import LLM_SUFFIX, Message
from tasks.dataset.query import stream_rows
from tasks.instruct.preserve import Required, missing_literals
from tasks.rules.grounding import checked_values, first_ungrounded, new_names

REJECTIONS = (("instruct", "not_preserved"), ("instruct", "leaked_answer"),
              ("trajectories", "ungrounded"), ("trajectories", "examples_differ"))


class Share(BaseModel):
    value: str
    count: int
    share: float


class EcosystemAudit(BaseModel):
    ecosystem: str
    tasks: int
    distinct_share: float
    preserved: int
    trajectories: int
    grounded: int
    candidates: int
    rejected: dict[str, int]


class InstructionStats(BaseModel):
    tasks: int
    distinct: int
    distinct_share: float
    openings: list[Share]
    templates: int
    top_template: Share | None
    top_variant: dict[str, Share]
    """Per template component (layout, opener, closer): its most common variant."""
    max_phrasing_share: float
    ecosystems: list[EcosystemAudit]


def opening(text: str, words: int = 5) -> str:
    """The first ``words`` words of the first non-empty line."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return " ".join(line.split()[:words])


def _top(counter: Counter, total: int, n: int) -> list[Share]:
    return [Share(value=v, count=c, share=c / total) for v, c in counter.most_common(n)]


def _grounding(con: duckdb.DuckDBPyConnection) -> dict[str, list[int]]:
    """Per ecosystem, [trajectories, grounded when re-checked from the shards].

    A terminal view is checked with the argument values of the function view of the same
    task and mode.  Rows stream in shard order, where a task's views are written together,
    so only the views still waiting for their other half are held."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    calls: dict[tuple[str, str], tuple[list, list]] = {}
    waiting: dict[tuple[str, str], list[tuple[str, list[Message], str]]] = defaultdict(list)

    def check(eco: str, messages: list[Message], tools: str,
              function_view: tuple[list, list] | None) -> None:
        values, chosen = function_view or (None, None)
        out[eco][0] += 1
        out[eco][1] += first_ungrounded(messages, json.loads(tools), values, chosen) is None

    for eco, task_id, space, mode, raw, tools in stream_rows(
            con, "select k.ecosystem, t.task_id, t.action_space, t.supervision, t.messages, "
                 "t.tools from trajectories t join tasks k using (task_id)"):
        messages = [Message.model_validate(m) for m in raw]
        key = (task_id, mode)
        if space != "function":
            if key in calls:
                check(eco, messages, tools, calls.pop(key))
            else:
                waiting[key].append((eco, messages, tools))
            continue
        check(eco, messages, tools, None)
        values = ([checked_values(c.function.name, json.loads(c.function.arguments))
                   for m in messages
                   for c in m.tool_calls or []], new_names(messages, json.loads(tools)))
        if key in waiting:
            for view in waiting.pop(key):
                check(*view, values)
        else:
            calls[key] = values
    for views in waiting.values():  # no function view to take the values from
        for eco, _, _ in views:
            out[eco][0] += 1
    return out


def instruction_stats(con: duckdb.DuckDBPyConnection, top: int = 5) -> InstructionStats:
    """Diversity and audit figures over the dataset behind ``con`` (views from
    :func:`tasks.dataset.query.connect`)."""
    have = {row[0] for row in con.execute("describe tasks").fetchall()}
    optional = [c if c in have else f"null as {c}" for c in ("template_id",
                                                               "instruction_literals")]
    n, distinct = con.execute("select count(*), count(distinct instruction) from tasks"
                              ).fetchone() or (0, 0)
    per_eco = {eco: (count, unique) for eco, count, unique in con.execute(
        "select ecosystem, count(*), count(distinct instruction) from tasks group by 1"
    ).fetchall()}
    templates: Counter[str] = Counter()
    openings: Counter[str] = Counter()
    preserved: Counter[str] = Counter()
    parts: dict[str, Counter] = {"layout": Counter(), "opener": Counter(), "closer": Counter()}
    for eco, text, template_id, literals in stream_rows(
            con, f"select ecosystem, instruction, {', '.join(optional)} from tasks"):
        openings[opening(text)] += 1
        preserved[eco] += literals is not None and not missing_literals(
            text, Required(tuple(literals)))
        if not template_id:  # written before template ids were recorded
            continue
        templates[template_id] += 1
        base = template_id.split(LLM_SUFFIX)[0]
        style, layout, opener, closer = (base.split("/") + ["", "", ""])[:4]
        parts["layout"][f"{style}/{layout}"] += 1
        parts["opener"][f"{style}/{opener}"] += 1
        parts["closer"][f"{style}/{closer}"] += 1
    recorded = sum(templates.values())
    top_variant = {k: _top(c, recorded, 1)[0] for k, c in parts.items() if c}
    phrasing = [top_variant[k].share for k in ("opener", "closer") if k in top_variant]
    if templates:
        phrasing.append(templates.most_common(1)[0][1] / recorded)
    grounded = _grounding(con)
    attempts = con.execute("select ecosystem, stage, reason, count(*) from attempts "
                           "group by all").fetchall()
    candidates: Counter[str] = Counter()
    rejected: dict[str, Counter] = defaultdict(Counter)
    for eco, stage, reason, count in attempts:
        candidates[eco] += count
        if (stage, reason) in REJECTIONS:
            rejected[eco][f"{stage}/{reason}"] += count
    audits = []
    for eco in sorted(set(per_eco) | set(candidates)):
        count, unique = per_eco.get(eco, (0, 0))
        trajectories, ok = grounded.get(eco, (0, 0))
        audits.append(EcosystemAudit(
            ecosystem=eco, tasks=count, distinct_share=unique / count if count else 0.0,
            preserved=preserved[eco], trajectories=trajectories, grounded=ok,
            candidates=candidates[eco],
            rejected={f"{s}/{r}": rejected[eco][f"{s}/{r}"] for s, r in REJECTIONS}))
    return InstructionStats(
        tasks=n, distinct=distinct, distinct_share=distinct / n if n else 0.0,
        openings=_top(openings, n, top) if n else [],
        templates=len(templates),
        top_template=_top(templates, recorded, 1)[0] if recorded else None,
        top_variant=top_variant, max_phrasing_share=max(phrasing, default=0.0),
        ecosystems=audits)


def format_instruction_stats(s: InstructionStats) -> str:
    """The human-readable section of ``taskfactory stats``."""
    pct = "{:.1%}".format
    lines = [f"instructions: {s.tasks} tasks, {s.distinct} distinct texts "
             f"({pct(s.distinct_share)})", "  most common openings (first 5 words):"]
    lines += [f"    {pct(o.share):>6}  {o.count:>5}  {o.value}" for o in s.openings]
    lines.append(f"  template variants: {s.templates}"
                 + (f", most common {s.top_template.value} ({pct(s.top_template.share)})"
                    if s.top_template else ""))
    for part, v in s.top_variant.items():
        lines.append(f"  most common {part}: {v.value} ({pct(v.share)})")
    lines.append(f"  largest share of one template phrasing: {pct(s.max_phrasing_share)}")
    lines.append("  per ecosystem: tasks, distinct, preserved, grounded, rejections")
    for a in s.ecosystems:
        rejections = ", ".join(f"{k}={v}" for k, v in a.rejected.items())
        lines.append(f"    {a.ecosystem}: {a.tasks} tasks, {pct(a.distinct_share)} distinct, "
                     f"preserved {a.preserved}/{a.tasks}, grounded {a.grounded}/"
                     f"{a.trajectories} trajectories; of {a.candidates} candidates "
                     f"{rejections}")
    return "\n".join(lines)
