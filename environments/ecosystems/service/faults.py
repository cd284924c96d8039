"""Fault injectors of the ``service`` ecosystem: ``plant(files, seed)`` edits the tracker's
db file (``.service/db.json``) into a state its own rules forbid, the way a hand edit, a
half-finished migration or a bulk import leaves it (ecosystem.yaml, ``faults``).

The seeded tracker keeps its rules: every assignee is a user on the ticket's team, every
lead is on the team they lead (the member with the lowest id), every ticket's team exists,
a subtask is on its parent's team, and an escalated ticket is urgent.  Each injector
breaks one rule for one record, in a way its repair tool undoes exactly (the repaired db
equals the seeded one).
"""

from __future__ import annotations

import json
import random

Files = dict[str, bytes]
DB_PATH = ".service/db.json"


def _load(files: Files, name: str, seed: int) -> tuple[dict, random.Random]:
    return json.loads(files[DB_PATH]), random.Random(f"fault:{name}:{seed}")


def _save(files: Files, db: dict) -> Files:
    return {**files, DB_PATH: (json.dumps(db, indent=1, sort_keys=True) + "\n").encode()}


def _leads(db: dict) -> dict[str, int]:
    return {t["slug"]: t["lead"] for t in db["teams"]}


def _pick(rng: random.Random, items: list, what: str):  # noqa: ANN202 - a record
    if not items:
        raise LookupError(f"the seed has no {what}")
    return rng.choice(items)


def assignee_left_team(files: Files, seed: int) -> Files:
    """A ticket its team's lead works on, handed to someone of another team."""
    db, rng = _load(files, "assignee_left_team", seed)
    leads = _leads(db)
    ticket = _pick(rng, [t for t in db["tickets"] if t["assignee"] == leads[t["team"]]],
                   "ticket assigned to its team's lead")
    others = [u for u in db["users"] if u["team"] != ticket["team"]]
    ticket["assignee"] = _pick(rng, others, "user on another team")["id"]
    return _save(files, db)


def lead_moved_away(files: Files, seed: int) -> Files:
    """A team's lead moved to another team, still named as the first team's lead."""
    db, rng = _load(files, "lead_moved_away", seed)
    team = _pick(rng, db["teams"], "team")
    user = next(u for u in db["users"] if u["id"] == team["lead"])
    user["team"] = _pick(rng, [t["slug"] for t in db["teams"] if t is not team], "other team")
    return _save(files, db)


def ticket_on_deleted_team(files: Files, seed: int) -> Files:
    """An assigned ticket filed under a team slug that no team has (a team merged away)."""
    db, rng = _load(files, "ticket_on_deleted_team", seed)
    ticket = _pick(rng, [t for t in db["tickets"] if t["assignee"] is not None],
                   "assigned ticket")
    ticket["team"] = ticket["team"] + "-legacy"
    return _save(files, db)


def subtask_off_parent_team(files: Files, seed: int) -> Files:
    """A subtask moved to another team than its parent ticket's."""
    db, rng = _load(files, "subtask_off_parent_team", seed)
    ticket = _pick(rng, [t for t in db["tickets"] if t["parent"] is not None], "subtask")
    ticket["team"] = _pick(rng, [t["slug"] for t in db["teams"] if t["slug"] != ticket["team"]],
                           "other team")
    return _save(files, db)


def leaderless_team(files: Files, seed: int) -> Files:
    """A team whose lead was cleared."""
    db, rng = _load(files, "leaderless_team", seed)
    _pick(rng, db["teams"], "team")["lead"] = None
    return _save(files, db)


def assignee_removed(files: Files, seed: int) -> Files:
    """A ticket its team's lead works on, still assigned to a user id the directory no
    longer has (an account removed by a clean-up)."""
    db, rng = _load(files, "assignee_removed", seed)
    leads = _leads(db)
    ticket = _pick(rng, [t for t in db["tickets"] if t["assignee"] == leads[t["team"]]],
                   "ticket assigned to its team's lead")
    ticket["assignee"] = max(u["id"] for u in db["users"]) + rng.randint(1, 40)
    return _save(files, db)


def escalation_demoted(files: Files, seed: int) -> Files:
    """An escalated ticket (escalation makes a ticket urgent) whose priority a bulk edit
    lowered."""
    db, rng = _load(files, "escalation_demoted", seed)
    ticket = _pick(rng, [t for t in db["tickets"] if t["escalations"] > 0],
                   "escalated ticket")
    ticket["priority"] = rng.choice(["low", "medium", "high"])
    return _save(files, db)
