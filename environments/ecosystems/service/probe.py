"""Probe for the ``service`` ecosystem: the ticket tracker's records as canonical JSON.

Runs with the standard library only (``python3 - < probe.py``) from the workspace, and
inside the verifier (as root, on what the agent left).  It reads the service's db file
``.service/db.json`` — the file the server reads on every request and rewrites atomically
on every change, so it is exactly what the API serves — and never talks to the port: a
process the agent starts there changes nothing the probe sees.  The file must be a
regular file (no symlink followed, a FIFO never blocks) of at most 64 MiB, else the probe
fails, as it does when the file is missing.
Output (one line, sorted keys)::

    {"tickets":  {"<id>": {"title", "description", "status", "priority", "team",
                           "assignee": <email> | null, "labels": [sorted],
                           "parent": <ticket id> | null, "escalations": <int>}},
     "comments": {"<ticket id>": [{"author": <email>, "body"}, ...]},   # in id order
     "users":    {"<email>": {"name", "team"}},
     "teams":    {"<slug>": {"name", "lead": <email>}}}

Only what a correct solution reproduces whatever the order of its calls is exposed:
users are keyed by email, and people are named by email (user ids are creation-order
dependent); comment ids are dropped (their order within one ticket is kept); tickets
without comments have no ``comments`` entry.  Ticket ids stay: new tickets get max + 1
or the id the task names.
"""

import json

TYPE_CHECKING = False  # not typing's: importing typing costs more than a probe's work
if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import read_regular

DB = ".service/db.json"
MAX_DB = 64 << 20


def main() -> None:
    db = json.loads(read_regular(DB, MAX_DB).decode("utf-8"))
    email = {u["id"]: u["email"] for u in db.get("users", [])}
    tickets = {
        str(t["id"]): {"title": t["title"], "description": t["description"],
                       "status": t["status"], "priority": t["priority"], "team": t["team"],
                       "assignee": email.get(t["assignee"]), "labels": sorted(t["labels"]),
                       "parent": t.get("parent"), "escalations": t.get("escalations", 0)}
        for t in db.get("tickets", [])
    }
    comments: dict[str, list] = {}
    for c in sorted(db.get("comments", []), key=lambda c: c["id"]):
        comments.setdefault(str(c["ticket"]), []).append(
            {"author": email.get(c["author"]), "body": c["body"]})
    users = {u["email"]: {"name": u["name"], "team": u["team"]} for u in db.get("users", [])}
    teams = {t["slug"]: {"name": t["name"], "lead": email.get(t["lead"])}
             for t in db.get("teams", [])}
    state = {"comments": comments, "teams": teams, "tickets": tickets, "users": users}
    print(json.dumps(state, sort_keys=True, separators=(",", ":")))


main()
