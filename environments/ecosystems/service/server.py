"""Ticket tracker service: a stdlib-only JSON API over one JSON db file.

Run: ``python3 server.py --db /workspace/.service/db.json [--host 127.0.0.1] [--port 8080]``

State contract
--------------
The db file is the only state.  It is read on EVERY request (so replacing the file —
e.g. restoring a snapshot of the workspace — takes effect immediately, without a
restart) and every change is written atomically (temp file in the same folder, then
``os.replace``).  Requests are serialized by one lock.  Nothing is time-dependent: new
ids are ``max(existing ids) + 1`` (1 when empty), and records carry no timestamps.

Records (db file: ``{"teams": [...], "users": [...], "tickets": [...], "comments": [...]}``)
- team:    ``{"id", "slug", "name", "lead"}`` (lead: a user id)
- user:    ``{"id", "name", "email", "team"}`` (team: a slug; emails are unique)
- ticket:  ``{"id", "title", "description", "status", "priority", "team", "assignee",
  "labels", "parent", "escalations"}`` (assignee: a user id or null; labels: sorted,
  distinct; parent: the id of the ticket this one is a subtask of, or null; escalations:
  how often the ticket was escalated, a logical counter)
- comment: ``{"id", "ticket", "author", "body"}`` (author: a user id; the id orders a
  ticket's comments)

Statuses: ``open``, ``in_progress``, ``resolved``, ``closed``.  Allowed transitions:
open -> in_progress | resolved | closed; in_progress -> open | resolved | closed;
resolved -> open | closed; closed -> open.  Priorities: ``low``, ``medium``, ``high``,
``urgent``.

Responses are JSON with sorted keys; lists are ordered by id.  Ticket and comment
responses add ``assignee_email`` / ``author_email``.  Errors are ``{"error": message}``
with 400 (malformed request or value), 404 (unknown record or route), 405 (method),
409 (conflict: duplicate, disallowed transition, label already present) or 503 (db
unreadable).

Endpoints (``<user>`` is a numeric user id or an email address)
- ``GET /health`` -> ``{"status": "ok"}``
- ``GET /teams`` -> ``{"count", "teams"}``;  ``GET /teams/<slug>`` -> team
- ``GET /teams/<slug>/users`` -> ``{"count", "users"}`` (the team's members)
- ``PUT /teams/<slug>/lead`` ``{"user": <user>}`` -> team (the new lead must be a member)
- ``GET /users[?team=&email=]`` -> ``{"count", "users"}``;  ``GET /users/<user>`` -> user
- ``POST /users`` ``{"name", "email", "team"}`` -> 201 user
- ``PATCH /users/<user>`` ``{"name"?, "team"?}`` -> user
- ``GET /tickets[?status=&team=&priority=&assignee=&label=&parent=&q=]`` -> ``{"count",
  "tickets"}``.  Filters combine with AND; a filter value may list alternatives separated
  by commas (``status=open,in_progress``); ``assignee`` takes a user id, an email or
  ``none``; ``parent`` a ticket id or ``none``; ``q`` matches title or description,
  case-insensitively, as a substring.
- ``GET /stats?by=<status|priority|team|assignee|label>[&filters as above]`` ->
  ``{"by", "counts": {value: n}, "total"}``
- ``GET /tickets/<id>`` -> ticket
- ``POST /tickets`` ``{"title", "team", "priority"?="medium", "description"?="",
  "labels"?=[], "assignee"?=null, "parent"?=null, "id"?}`` -> 201 ticket (status
  ``open``; ``id`` is optional and must be unused; by default max + 1)
- ``PATCH /tickets/<id>`` ``{"title"?, "description"?, "priority"?, "team"?, "status"?,
  "assignee"?}`` -> ticket (status changes follow the allowed transitions)
- ``PUT /tickets/<id>/assignee`` ``{"user": <user> | null}`` -> ticket
- ``PUT /tickets/<id>/status`` ``{"status"}`` -> ticket
- ``POST /tickets/<id>/labels`` ``{"label"}`` -> ticket;  ``DELETE /tickets/<id>/labels/<label>``
- ``POST /tickets/<id>/escalate`` -> ticket with priority ``urgent``, assigned to its
  team's lead, ``escalations`` + 1
- ``GET /tickets/<id>/comments`` -> ``{"count", "comments"}``
- ``POST /tickets/<id>/comments`` ``{"author": <user>, "body"}`` -> 201 comment
- ``GET /comments`` -> ``{"count", "comments"}`` (all tickets)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

STATUSES = ("open", "in_progress", "resolved", "closed")
PRIORITIES = ("low", "medium", "high", "urgent")
TRANSITIONS = {
    "open": ("in_progress", "resolved", "closed"),
    "in_progress": ("open", "resolved", "closed"),
    "resolved": ("open", "closed"),
    "closed": ("open",),
}
STAT_FIELDS = ("status", "priority", "team", "assignee", "label")
LABEL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
LOCK = threading.Lock()
CLIENT_CLOSE_S = 5.0
"""How long a connection waits, after its last response, for the client to close it."""


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Store:
    """The db file: loaded per request, saved atomically."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)

    def load(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as f:
                db = json.load(f)
        except (OSError, ValueError) as exc:
            raise ApiError(503, f"db unreadable: {type(exc).__name__}") from exc
        for kind in ("teams", "users", "tickets", "comments"):
            db.setdefault(kind, [])
        return db

    def save(self, db: dict) -> None:
        for kind in ("teams", "users", "tickets", "comments"):
            db[kind].sort(key=lambda r: r["id"])
        folder = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(prefix=".db-", suffix=".tmp", dir=folder)
        try:
            os.fchmod(fd, 0o644)  # readable by every user, as the seeded file is
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(db, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


# ---- record helpers -------------------------------------------------------------------

def _next_id(records: list[dict]) -> int:
    return max((r["id"] for r in records), default=0) + 1


def _by_id(records: list[dict], rid: int, what: str) -> dict:
    for r in records:
        if r["id"] == rid:
            return r
    raise ApiError(404, f"no {what} {rid}")


def _int_id(raw: object, what: str) -> int:
    text = str(raw).strip()
    if isinstance(raw, bool) or not text.isdigit() or int(text) < 1:
        raise ApiError(400, f"{what} must be a positive integer, got {raw!r}")
    return int(text)


def _team(db: dict, slug: object) -> dict:
    for t in db["teams"]:
        if t["slug"] == slug:
            return t
    raise ApiError(404, f"no team {slug!r}")


def _user(db: dict, ref: object) -> dict:
    """A user by numeric id or by email (case-insensitive)."""
    if isinstance(ref, int) and not isinstance(ref, bool) or str(ref).isdigit():
        return _by_id(db["users"], int(str(ref)), "user")
    if isinstance(ref, str) and "@" in ref:
        for u in db["users"]:
            if u["email"].lower() == ref.strip().lower():
                return u
        raise ApiError(404, f"no user with email {ref!r}")
    raise ApiError(400, f"a user is a numeric id or an email, got {ref!r}")


def _text(body: dict, key: str, required: bool = True, default: str = "") -> str:
    if key not in body:
        if required:
            raise ApiError(400, f"missing field {key!r}")
        return default
    value = body[key]
    if not isinstance(value, str) or (required and not value.strip()):
        raise ApiError(400, f"field {key!r} must be a non-empty string")
    return value


def _choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ApiError(400, f"{what} must be one of {', '.join(allowed)}; got {value!r}")
    return str(value)


def _labels(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and LABEL.match(v)
                                              for v in value):
        raise ApiError(400, "labels must be a list of lowercase words")
    return sorted(set(value))


def _emails(db: dict) -> dict[int, str]:
    return {u["id"]: u["email"] for u in db["users"]}


def _ticket_view(db: dict, t: dict) -> dict:
    return {**t, "assignee_email": _emails(db).get(t["assignee"])}


def _comment_view(db: dict, c: dict) -> dict:
    return {**c, "author_email": _emails(db).get(c["author"])}


def _set_status(t: dict, status: object) -> None:
    new = _choice(status, STATUSES, "status")
    if new == t["status"]:
        raise ApiError(409, f"ticket {t['id']} is already {new}")
    if new not in TRANSITIONS[t["status"]]:
        raise ApiError(409, f"ticket {t['id']} cannot go from {t['status']} to {new}")
    t["status"] = new


def _set_assignee(db: dict, t: dict, ref: object) -> None:
    t["assignee"] = None if ref is None else _user(db, ref)["id"]


# ---- ticket queries -------------------------------------------------------------------

def _matches(db: dict, t: dict, field: str, wanted: list[str]) -> bool:
    if field == "q":
        hay = (t["title"] + "\n" + t["description"]).lower()
        return any(w.lower() in hay for w in wanted)
    if field == "label":
        return any(w in t["labels"] for w in wanted)
    if field == "parent":
        return any(t.get("parent") == (None if w == "none" else _int_id(w, "parent"))
                   for w in wanted)
    if field == "assignee":
        ids = set()
        for w in wanted:
            if w == "none":
                ids.add(None)
            else:
                try:
                    ids.add(_user(db, w)["id"])
                except ApiError:
                    continue
        return t["assignee"] in ids
    return t[field] in wanted


def _filtered(db: dict, query: dict[str, list[str]]) -> list[dict]:
    filters = {}
    for field in ("status", "team", "priority", "assignee", "label", "parent", "q"):
        if field in query:
            filters[field] = [v for raw in query[field] for v in raw.split(",") if v != ""]
    return [t for t in db["tickets"]
            if all(_matches(db, t, f, w) for f, w in filters.items())]


def _stats(db: dict, query: dict[str, list[str]]) -> dict:
    by = (query.get("by") or [""])[0]
    _choice(by, STAT_FIELDS, "by")
    emails = _emails(db)
    counts: dict[str, int] = {}
    tickets = _filtered(db, query)
    for t in tickets:
        if by == "label":
            keys = t["labels"]
        elif by == "assignee":
            keys = [emails.get(t["assignee"], "none")]
        else:
            keys = [t[by]]
        for k in keys:
            counts[k] = counts.get(k, 0) + 1
    return {"by": by, "counts": counts, "total": len(tickets)}


# ---- routes ---------------------------------------------------------------------------

def _route_teams(db: dict, method: str, parts: list[str], body: dict,
                 store: Store) -> tuple[int, object]:
    if len(parts) == 1 and method == "GET":
        return 200, {"count": len(db["teams"]), "teams": db["teams"]}
    team = _team(db, parts[1]) if len(parts) > 1 else None
    if team and len(parts) == 2 and method == "GET":
        return 200, team
    if team and parts[2:] == ["users"] and method == "GET":
        users = [u for u in db["users"] if u["team"] == team["slug"]]
        return 200, {"count": len(users), "users": users}
    if team and parts[2:] == ["lead"] and method == "PUT":
        user = _user(db, body.get("user"))
        if user["team"] != team["slug"]:
            raise ApiError(409, f"{user['email']} is not a member of team {team['slug']!r}")
        team["lead"] = user["id"]
        store.save(db)
        return 200, team
    raise ApiError(405 if len(parts) <= 3 else 404, f"{method} not supported here")


def _route_users(db: dict, method: str, parts: list[str], query: dict, body: dict,
                 store: Store) -> tuple[int, object]:
    if len(parts) == 1 and method == "GET":
        users = db["users"]
        if "team" in query:
            users = [u for u in users if u["team"] in query["team"]]
        if "email" in query:
            wanted = {e.lower() for e in query["email"]}
            users = [u for u in users if u["email"].lower() in wanted]
        return 200, {"count": len(users), "users": users}
    if len(parts) == 1 and method == "POST":
        name, email = _text(body, "name"), _text(body, "email").strip()
        if "@" not in email or any(c.isspace() for c in email):
            raise ApiError(400, f"not an email address: {email!r}")
        if any(u["email"].lower() == email.lower() for u in db["users"]):
            raise ApiError(409, f"a user with email {email!r} exists")
        team = _team(db, body.get("team"))["slug"]
        user = {"id": _next_id(db["users"]), "name": name, "email": email, "team": team}
        db["users"].append(user)
        store.save(db)
        return 201, user
    if len(parts) == 2:
        user = _user(db, parts[1])
        if method == "GET":
            return 200, user
        if method == "PATCH":
            unknown = set(body) - {"name", "team"}
            if unknown:
                raise ApiError(400, f"cannot change {sorted(unknown)} of a user")
            if "name" in body:
                user["name"] = _text(body, "name")
            if "team" in body:
                user["team"] = _team(db, body["team"])["slug"]
            store.save(db)
            return 200, user
    raise ApiError(405 if len(parts) <= 2 else 404, f"{method} not supported here")


def _create_ticket(db: dict, body: dict, store: Store) -> tuple[int, object]:
    tid = _next_id(db["tickets"]) if body.get("id") is None else _int_id(body["id"], "id")
    if any(t["id"] == tid for t in db["tickets"]):
        raise ApiError(409, f"ticket {tid} exists")
    ticket = {
        "id": tid,
        "title": _text(body, "title").strip(),
        "description": _text(body, "description", required=False),
        "status": "open",
        "priority": _choice(body.get("priority", "medium"), PRIORITIES, "priority"),
        "team": _team(db, body.get("team"))["slug"],
        "assignee": None,
        "labels": _labels(body.get("labels", [])),
        "parent": None,
        "escalations": 0,
    }
    _set_assignee(db, ticket, body.get("assignee"))
    if body.get("parent") is not None:
        ticket["parent"] = _by_id(db["tickets"], _int_id(body["parent"], "parent"), "ticket")["id"]
    db["tickets"].append(ticket)
    store.save(db)
    return 201, _ticket_view(db, ticket)


def _patch_ticket(db: dict, t: dict, body: dict) -> None:
    unknown = set(body) - {"title", "description", "priority", "team", "status", "assignee"}
    if unknown:
        raise ApiError(400, f"cannot change {sorted(unknown)} of a ticket")
    if "title" in body:
        t["title"] = _text(body, "title").strip()
    if "description" in body:
        t["description"] = _text(body, "description", required=False)
    if "priority" in body:
        t["priority"] = _choice(body["priority"], PRIORITIES, "priority")
    if "team" in body:
        t["team"] = _team(db, body["team"])["slug"]
    if "assignee" in body:
        _set_assignee(db, t, body["assignee"])
    if "status" in body:
        _set_status(t, body["status"])


def _route_ticket(db: dict, method: str, parts: list[str], body: dict,
                  store: Store) -> tuple[int, object]:
    t = _by_id(db["tickets"], _int_id(parts[1], "ticket id"), "ticket")
    sub = parts[2] if len(parts) > 2 else ""
    if sub == "" and method == "GET":
        return 200, _ticket_view(db, t)
    if sub == "comments" and len(parts) == 3 and method == "GET":
        comments = [_comment_view(db, c) for c in db["comments"] if c["ticket"] == t["id"]]
        return 200, {"count": len(comments), "comments": comments}
    if sub == "" and method == "PATCH":
        _patch_ticket(db, t, body)
    elif sub == "assignee" and len(parts) == 3 and method == "PUT":
        if "user" not in body:
            raise ApiError(400, "missing field 'user' (a user id, an email or null)")
        _set_assignee(db, t, body["user"])
    elif sub == "status" and len(parts) == 3 and method == "PUT":
        _set_status(t, body.get("status"))
    elif sub == "labels" and len(parts) == 3 and method == "POST":
        label = body.get("label")
        if not isinstance(label, str) or not LABEL.match(label):
            raise ApiError(400, "field 'label' must be a lowercase word")
        if label in t["labels"]:
            raise ApiError(409, f"ticket {t['id']} already has label {label!r}")
        t["labels"] = sorted([*t["labels"], label])
    elif sub == "labels" and len(parts) == 4 and method == "DELETE":
        if parts[3] not in t["labels"]:
            raise ApiError(404, f"ticket {t['id']} has no label {parts[3]!r}")
        t["labels"] = [x for x in t["labels"] if x != parts[3]]
    elif sub == "escalate" and len(parts) == 3 and method == "POST":
        t["priority"] = "urgent"
        t["assignee"] = _team(db, t["team"])["lead"]
        t["escalations"] = t.get("escalations", 0) + 1
    elif sub == "comments" and len(parts) == 3 and method == "POST":
        comment = {"id": _next_id(db["comments"]), "ticket": t["id"],
                   "author": _user(db, body.get("author"))["id"],
                   "body": _text(body, "body").strip()}
        db["comments"].append(comment)
        store.save(db)
        return 201, _comment_view(db, comment)
    else:
        raise ApiError(405 if sub in ("", "assignee", "status", "labels", "escalate",
                                      "comments") else 404, f"{method} not supported here")
    store.save(db)
    return 200, _ticket_view(db, t)


def dispatch(store: Store, method: str, path: str, query: dict[str, list[str]],
             body: dict) -> tuple[int, object]:
    """One API call against the db file: (HTTP status, JSON-able payload)."""
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    if parts == ["health"] and method == "GET":
        return 200, {"status": "ok"}
    if not parts or parts[0] not in ("teams", "users", "tickets", "comments", "stats"):
        raise ApiError(404, f"no route {path!r}")
    db = store.load()
    head = parts[0]
    if head == "teams":
        return _route_teams(db, method, parts, body, store)
    if head == "users":
        return _route_users(db, method, parts, query, body, store)
    if head == "stats" and method == "GET":
        return 200, _stats(db, query)
    if head == "comments" and method == "GET" and len(parts) == 1:
        comments = [_comment_view(db, c) for c in db["comments"]]
        return 200, {"count": len(comments), "comments": comments}
    if head == "tickets" and len(parts) == 1:
        if method == "GET":
            tickets = [_ticket_view(db, t) for t in _filtered(db, query)]
            return 200, {"count": len(tickets), "tickets": tickets}
        if method == "POST":
            return _create_ticket(db, body, store)
    if head == "tickets" and len(parts) >= 2:
        return _route_ticket(db, method, parts, body, store)
    raise ApiError(405, f"{method} not supported on {path!r}")


class Handler(BaseHTTPRequestHandler):
    server_version = "TicketService/1"
    store: Store

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            body: object = {}
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError as exc:
                    raise ApiError(400, "request body is not valid JSON") from exc
            if not isinstance(body, dict):
                raise ApiError(400, "request body must be a JSON object")
            with LOCK:
                status, payload = dispatch(self.store, method, url.path,
                                           parse_qs(url.query), body)
        except ApiError as exc:
            status, payload = exc.status, {"error": str(exc)}
        data = (json.dumps(payload, sort_keys=True, indent=1) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def handle(self) -> None:
        """Serve the connection's requests, then let the client close it first: the side
        that closes first keeps the connection in TIME_WAIT for a minute, and the client's
        is on a port of its own, not on the server's."""
        super().handle()
        self.connection.settimeout(CLIENT_CLOSE_S)
        try:
            while self.connection.recv(65536):
                pass
        except OSError:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description="Ticket tracker JSON API over a db file.")
    parser.add_argument("--db", required=True, help="path of the JSON db file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    Handler.store = Store(args.db)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
