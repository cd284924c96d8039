"""``taskfactory import atif``: other agents' ATIF trajectories of the dataset's tasks into
``rollouts``, so ``difficulty`` counts them.

Every document of the source (:func:`tasks.exports.atif.sources.documents`) is read, validated,
tied to a task of the dataset and given its reward before anything is written: one that
is not JSON, not ATIF, names no task of the dataset or holds images is
refused in one line (:class:`AtifError`) and nothing is written.  A trial without a reward
(Harbor's errored trial: no verifier reward) is no outcome: it is left out and counted,
and only when no document has a reward is the import refused.  Then, under the
dataset's writer lock, the documents the ``rollouts`` table does not hold yet (by content
id, or by the ``trajectory_id`` an export gave it) are committed in one shard.

Each becomes one rollout: ``model`` ``<agent>:<model>`` (:func:`imported_model`: counted
apart from ``solve``'s attempts with that model), ``agent`` the agent's name,
``stop_reason`` ``imported``, ``attempt`` numbered on from the attempts the dataset holds
for that task and model, ``k`` the documents this import adds for them; the conversation
as :func:`tasks.exports.atif.messages.chat_messages` reads it, supervised ``masked`` like
``solve``'s, the reasoning and usage in ``turns``; the action space the document's own
(``export atif``) or ``terminal`` (Harbor's agents act in a terminal); ``checks_*`` and
``verifier_lines`` where the trial or document says.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from schemas.records import SOLVE_AGENT, RolloutRow
from tasks.dataset.dataset import Dataset
from tasks.dataset.provenance import RunIdentity, new_run_id
from tasks.dataset.store.writer import ShardWriter
from tasks.exports.atif import AtifError
from tasks.exports.atif.messages import chat_messages
from tasks.exports.atif.models import Trajectory, dump
from tasks.exports.atif.sources import Found, documents
from tasks.trajectories.render import supervise


@dataclass(frozen=True)
class TaskInfo:
    task_id: str
    ecosystem: str
    kind: str | None
    seed: int


@dataclass(frozen=True)
class Imported:
    """What an import did: rollouts added per model, and documents already held."""

    added: Counter[str]
    held: int
    run_id: str
    unrewarded: list[str]
    """Where the documents without a reward are: errored trials, as Harbor counts them (no
    verifier reward), left out like the attempts the infrastructure failed in ``solve``."""


def _tasks(dataset: Dataset) -> dict[str, TaskInfo]:
    """Each task by its id and by its exported folder name (``<ecosystem>-<task_id>``)."""
    found: dict[str, TaskInfo] = {}
    for task_id, ecosystem, kind, seed in dataset.rows(
            "select task_id, any_value(ecosystem), any_value(kind), any_value(seed) "
            "from tasks group by task_id"):
        info = TaskInfo(task_id, ecosystem, kind, int(seed))
        found[task_id] = found[f"{ecosystem}-{task_id}"] = info
    return found


def _task(found: Found, tasks: dict[str, TaskInfo], data: Path) -> TaskInfo:
    names = found.names()
    for name in names:
        if name in tasks:
            return tasks[name]
    said = f"it names {', '.join(dict.fromkeys(names))}" if names else "it names no task"
    raise AtifError(f"{found.where}: no task of {data} ({said}); import trials of tasks "
                    "exported from this dataset (`taskfactory export harbor`)")


def imported_model(doc: Trajectory) -> str:
    """``rollouts.model`` of an imported document: ``<agent>:<model>`` (the agent's name
    alone when it names no model), so that another harness's attempts are counted apart
    from ``solve``'s; the model as it is for ``solve``'s own agent (an exported rollout)."""
    agent, model = doc.agent.name, doc.agent.model_name
    if agent == SOLVE_AGENT and model:
        return model
    return f"{agent}:{model}" if model else agent


def _row(found: Found, task: TaskInfo, reward: float, run_id: str) -> RolloutRow:
    """The rollout without ``attempt``, ``k`` and provenance (set once held ones are out)."""
    doc, extra = found.doc, found.extra
    messages, turns = chat_messages(doc)
    passed, total = found.checks()
    space = extra.get("action_space")
    content = json.dumps([task.task_id, dump(doc)], sort_keys=True)
    return RolloutRow(
        trajectory_id=hashlib.sha256(content.encode()).hexdigest()[:20], task_id=task.task_id,
        run_id=run_id, messages=supervise(messages, "masked"),
        tools=json.dumps(doc.agent.tool_definitions or [], sort_keys=True),
        action_space=space if space in ("function", "terminal") else "terminal",
        reward=reward, n_turns=len(turns), model=imported_model(doc),
        attempt=0, k=1, ecosystem=task.ecosystem, kind=task.kind, stop_reason="imported",
        detail=f"{doc.agent.name} {doc.agent.version}: {found.where}"[-500:],
        checks_passed=passed, checks_total=total,
        prompt_tokens=sum(t.prompt_tokens or 0 for t in turns),
        completion_tokens=sum(t.completion_tokens or 0 for t in turns),
        llm_s=round(sum(t.latency_s or 0 for t in turns), 4),
        total_s=float(extra["total_s"]) if isinstance(extra.get("total_s"), int | float) else 0,
        unchecked_changes=[], created_at=datetime.now(UTC), agent=doc.agent.name,
        turns=turns, verifier_lines=found.verifier_lines())


def _numbered(rows: list[RolloutRow], dataset: Dataset) -> list[RolloutRow]:
    """The rows with attempt indices after the dataset's, and ``k`` per task and model."""
    last = {(t, m): int(a) for t, m, a in dataset.rows(
        "select task_id, model, max(attempt) from rollouts group by all")}
    k = Counter((r.task_id, r.model) for r in rows)
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for r in rows:
        key = (r.task_id, r.model)
        out.append(r.model_copy(update={"attempt": last.get(key, -1) + 1 + seen[key],
                                        "k": k[key]}))
        seen[key] += 1
    return out


def _rewarded(found: list[Found]) -> tuple[list[tuple[Found, float]], list[str]]:
    """The documents with a reward, and where the others are; AtifError when none has one."""
    rewards = [(f, f.reward()) for f in found]
    kept = [(f, r) for f, r in rewards if r is not None]
    if not kept:
        raise AtifError(f"{found[0].where}: no reward (none in the trial's result.json or "
                        "verifier/reward.*, nor in the document's extra), and no other "
                        "document has one; import whole trial folders")
    return kept, [f.where for f, r in rewards if r is None]


def import_atif(data: Path, src: Path) -> Imported:
    """Add the documents of ``src`` to ``data``'s rollouts (see the module doc)."""
    dataset = Dataset.open(data)
    tasks = _tasks(dataset)
    run_id = f"import-{new_run_id()}"
    kept, unrewarded = _rewarded(documents(src))
    rows = [(f.doc.trajectory_id, _row(f, _task(f, tasks, data), r, run_id)) for f, r in kept]
    with dataset.writable() as manifest:
        held = {t for (t,) in dataset.rows("select trajectory_id from rollouts")}
        fresh: dict[str, RolloutRow] = {}
        for own_id, row in rows:
            if row.trajectory_id not in held and own_id not in held:
                fresh.setdefault(row.trajectory_id, row)
        new = _numbered(list(fresh.values()), dataset)
        identity = RunIdentity(run_id=run_id, flow_run_id=None, config_hash=hashlib.sha256(
            " ".join(sorted(fresh)).encode()).hexdigest()[:16])
        writer = ShardWriter(data, manifest, run_id)
        writer.add_group([("rollouts", r.model_copy(update={"provenance": identity.provenance(
            seed=tasks[r.task_id].seed, image_id=None)})) for r in new])
        writer.close()
    return Imported(Counter(r.model for r in new), len(rows) - len(new), run_id, unrewarded)
