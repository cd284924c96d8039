"""Shortcut controls for the ``service`` ecosystem: write fake records into the store.

The tracker's store (``.service/db.json``, read by the server on every request) gets the
expected record — ticket, comments of a ticket, user or team — created or replaced:
``empty`` with empty text and default fields, ``fill`` with every text field holding
the instruction's literals (one per line) and the literals as labels.
"""

from __future__ import annotations

import json

DB = ".service/db.json"

_EDIT = '''import json
key, text, labels = json.loads(ARGS)
db = json.load(open(DB, encoding="utf-8"))
def put(kind, match, record):
    rows = [r for r in db[kind] if not match(r)]
    record.setdefault("id", max([r["id"] for r in db[kind]], default=0) + 1)
    db[kind] = sorted(rows + [record], key=lambda r: r["id"])
for section in SECTIONS:
    if section == "tickets":
        put("tickets", lambda r: r["id"] == int(key), {
            "id": int(key), "title": text, "description": text, "status": "open",
            "priority": "low", "team": "", "assignee": None, "labels": labels,
            "parent": None, "escalations": 0})
    elif section == "comments":
        db["comments"] = [c for c in db["comments"] if c["ticket"] != int(key)]
        put("comments", lambda r: False, {"ticket": int(key), "author": db["users"][0]["id"],
                                          "body": text})
    elif section == "users":
        put("users", lambda r: r["email"] == key, {"email": key, "name": text, "team": ""})
    elif section == "teams":
        put("teams", lambda r: r["slug"] == key, {"slug": key, "name": text, "lead": None})
json.dump(db, open(DB, "w", encoding="utf-8"))
'''


def _script(key: str, expected: dict, text: str, labels: list[str]) -> str | None:
    sections = [s for s in ("tickets", "comments", "users", "teams") if s in expected]
    if not sections:
        return None
    source = (f"DB = {DB!r}\nSECTIONS = {sections!r}\n"
              f"ARGS = {json.dumps(json.dumps([key, text, labels]))}\n" + _EDIT)
    return "python3 - <<'PY'\n" + source + "PY"


def empty(key: str, expected: dict) -> str | None:
    return _script(key, expected, "", [])


def fill(key: str, expected: dict, literals: list[str]) -> str | None:
    return _script(key, expected, "\n".join(literals), sorted(set(literals)))
