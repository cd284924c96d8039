"""Instruction and trajectory statistics of a dataset, for ``taskfactory stats``.

Diversity is measured on the shards, not guessed: the share of distinct instruction
texts, the most common openings (the first words of the first line), and how often each
template variant was drawn (``tasks.template_id`` = ``style/layout/opener/closer``).  The
largest share of one *phrasing* is the largest share of any opener, closer or whole
template id — the layout is formatting, not wording.

The audit re-checks what the pipeline enforced, from the shards alone: every task's
instruction still holds each of its ``instruction_literals`` as a code span (tasks written
before these columns existed count as not re-checked: template ``unknown``), and every
trajectory is grounded (terminal calls are checked with the argument values of the
matching function-view call).  Rejections come from ``attempts``.

Imports neither Prefect nor Docker.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import duckdb
from pydantic import BaseModel

from schemas.records import LLM_SUFFIX, Message
from tasks.grounding import first_ungrounded
from tasks.preserve import Required, missing_literals

REJECTIONS = (("instruct", "not_preserved"), ("trajectories", "ungrounded"))


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


def _grounding(con: duckdb.DuckDBPyConnection) -> dict[str, list[bool]]:
    """Per ecosystem, one bool per trajectory: grounded when re-checked from the shards."""
    rows = con.execute(
        "select k.ecosystem, t.task_id, t.action_space, t.supervision, t.messages, t.tools "
        "from trajectories t join tasks k using (task_id) "
        "order by t.task_id, t.supervision, t.action_space").fetchall()
    calls: dict[tuple[str, str], list[dict]] = {}
    out: dict[str, list[bool]] = defaultdict(list)
    for eco, task_id, space, mode, raw, tools in rows:
        messages = [Message.model_validate(m) for m in raw]
        values = None
        if space == "function":
            calls[(task_id, mode)] = [json.loads(c.function.arguments) for m in messages
                                      for c in m.tool_calls or []]
        else:
            values = calls.get((task_id, mode))
            if values is None:  # no function view to take the values from
                out[eco].append(False)
                continue
        out[eco].append(first_ungrounded(messages, json.loads(tools), values) is None)
    return out


def instruction_stats(con: duckdb.DuckDBPyConnection, top: int = 5) -> InstructionStats:
    """Diversity and audit figures over the dataset behind ``con`` (views from
    :func:`flows.query.connect`)."""
    have = {row[0] for row in con.execute("describe tasks").fetchall()}
    optional = [c if c in have else f"null as {c}" for c in ("template_id",
                                                               "instruction_literals")]
    tasks = [(eco, text, template_id or "unknown", literals) for eco, text, template_id, literals
             in con.execute(f"select ecosystem, instruction, {', '.join(optional)} "
                            "from tasks").fetchall()]
    n = len(tasks)
    texts = Counter(t[1] for t in tasks)
    templates = Counter(t[2] for t in tasks if t[2] != "unknown")
    recorded = sum(templates.values())
    parts: dict[str, Counter] = {"layout": Counter(), "opener": Counter(), "closer": Counter()}
    for _, _, template_id, _ in tasks:
        if template_id == "unknown":
            continue
        base = template_id.split(LLM_SUFFIX)[0]
        style, layout, opener, closer = (base.split("/") + ["", "", ""])[:4]
        parts["layout"][f"{style}/{layout}"] += 1
        parts["opener"][f"{style}/{opener}"] += 1
        parts["closer"][f"{style}/{closer}"] += 1
    top_variant = {k: _top(c, recorded, 1)[0] for k, c in parts.items() if c}
    phrasing = [top_variant[k].share for k in ("opener", "closer") if k in top_variant]
    if templates:
        phrasing.append(templates.most_common(1)[0][1] / recorded)
    grounded = _grounding(con)
    attempts = con.execute("select ecosystem, stage, reason, count(*) from attempts "
                           "group by all").fetchall()
    per_eco: dict[str, list] = defaultdict(list)
    for t in tasks:
        per_eco[t[0]].append(t)
    candidates: Counter[str] = Counter()
    rejected: dict[str, Counter] = defaultdict(Counter)
    for eco, stage, reason, count in attempts:
        candidates[eco] += count
        if (stage, reason) in REJECTIONS:
            rejected[eco][f"{stage}/{reason}"] += count
    audits = []
    for eco in sorted(set(per_eco) | set(candidates)):
        rows = per_eco.get(eco, [])
        audits.append(EcosystemAudit(
            ecosystem=eco, tasks=len(rows),
            distinct_share=len({r[1] for r in rows}) / len(rows) if rows else 0.0,
            preserved=sum(r[3] is not None and not missing_literals(r[1], Required(tuple(r[3])))
                          for r in rows),
            trajectories=len(grounded.get(eco, [])), grounded=sum(grounded.get(eco, [])),
            candidates=candidates[eco],
            rejected={f"{s}/{r}": rejected[eco][f"{s}/{r}"] for s, r in REJECTIONS}))
    return InstructionStats(
        tasks=n, distinct=len(texts), distinct_share=len(texts) / n if n else 0.0,
        openings=_top(Counter(opening(t[1]) for t in tasks), n, top) if n else [],
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
