"""Deterministic seed state for the ``service`` ecosystem: same seed, same bytes.

Writes the ticket tracker's db file ``.service/db.json`` (read by ``server.py`` on every
request) with 3-6 teams, 8-20 users, 20-60 tickets and their comments, using Faker for
people, companies, versions and prose; plus ``SERVICE.md``, the API reference (the
server's module docstring) for whoever works in the workspace.  Nothing depends on the
clock: ids are 1..n and records carry no timestamps.

``generate(seed, scale)``: at ``scale`` > 1 (the hard tier) the tracker holds at least
``scale`` times the users, tickets and comments of scale 1 (the same teams), drawn after
the scale-1 records from a stream of their own (``random.Random(f"{seed}:scale")``), so
scale 1 stays byte for byte what it always was.  Among them are distractors, each
differing from another record in one property: a ticket filed twice (same title,
description, team, priority, labels and assignee; another status), a namesake user (same
name; another team, under an address of their own) and a comment posted twice (same
ticket and body; another author).  The rules the faults rely on hold at every scale:
assignees are on their ticket's team, a lead is the lowest id of the team, subtasks are on
their parent's team, escalated tickets are urgent.
"""

from __future__ import annotations

import ast
import functools
import json
import random
import re
import threading
from pathlib import Path

from faker import Faker

DB_PATH = ".service/db.json"
DOC_PATH = "SERVICE.md"
BASE_URL = "http://127.0.0.1:8080"

TEAMS = [("platform", "Platform"), ("payments", "Payments"), ("identity", "Identity"),
         ("mobile", "Mobile"), ("data", "Data"), ("growth", "Growth"),
         ("infra", "Infrastructure"), ("support", "Customer Support"),
         ("search", "Search"), ("checkout", "Checkout"), ("security", "Security"),
         ("web", "Web App")]
NOUNS = ["invoice", "report", "order", "account", "dashboard", "webhook", "export",
         "notification", "subscription", "profile", "session", "upload", "refund", "coupon",
         "cart", "receipt", "password", "token", "schedule", "workspace", "calendar", "badge"]
LABELS = ["bug", "feature", "regression", "performance", "security", "ux", "docs",
          "customer", "backend", "frontend", "flaky-test", "tech-debt", "accessibility"]
BROWSERS = ["Safari", "Firefox", "Chrome", "Edge", "Android WebView"]
TITLES = [
    "{Noun} page times out for large accounts",
    "Cannot save {noun} settings after upgrade to {version}",
    "Add CSV export to the {noun} view",
    "{Noun} API returns 500 when the name contains {char}",
    "Typo in the {noun} confirmation email",
    "Slow {noun} search for {company}",
    "Support bulk deletion of {noun}s",
    "Flaky {noun} integration test on CI",
    "Upgrade {lib} to {version}",
    "Login loop on {browser} after {noun} change",
    "Duplicate {noun} records after import",
    "Improve the error message when the {noun} limit is reached",
    "Dark mode breaks the {noun} table",
    "Webhook retries for {noun} events never stop",
    "Document the {noun} endpoint",
    "{Noun} totals are off by one cent",
    "Allow filtering {noun}s by {other}",
    "Crash when opening a {noun} on {browser}",
    "Rate-limit {noun} requests per {other}",
    "Translate the {noun} screen for {country}",
]
DESCRIPTIONS = [
    "Reported by {company}: {sentence} It started after release {version}.",
    "Steps to reproduce: open the {noun} view on {browser} and wait. "
    "Expected: the page loads. Actual: {sentence}",
    "{sentence} {sentence2} See the support thread from {name}.",
    "Customer impact is {impact}. {sentence}",
    "Proposal: {sentence} This would help {company} and similar accounts.",
]
COMMENTS = [
    "Reproduced on staging with build {n}.",
    "I can take this one this week.",
    "{company} reported this again today.",
    "Looks related to ticket {ref}.",
    "Fix is in review, please verify once it lands.",
    "Waiting on feedback from {name}.",
    "Lowering the urgency: a workaround is documented.",
    "Added logs: {n} failures in the last nightly run.",
    "Could not reproduce on {browser}; need more details.",
    "Confirmed with {name}, this affects {country} customers only.",
]
STATUS_WEIGHTS = {"open": 35, "in_progress": 25, "resolved": 20, "closed": 20}
PRIORITY_WEIGHTS = {"low": 25, "medium": 40, "high": 25, "urgent": 10}

_parse_lock = threading.Lock()


@functools.cache
def api_reference() -> str:
    """The server's module docstring: the API as the service documents it.

    Parsed under a lock: the AST converter of CPython 3.11.7 keeps its recursion counter
    per interpreter, so two first calls from parallel candidates' threads can fail with
    ``SystemError: AST constructor recursion depth mismatch`` (CPython issue 106905)."""
    source = (Path(__file__).parent / "server.py").read_text()
    with _parse_lock:
        return ast.get_docstring(ast.parse(source)) or ""


def _fill(template: str, fake: Faker, rng: random.Random, **extra: str) -> str:
    """``template`` with each ``{field}`` drawn (lazily, in order of appearance)."""
    noun = rng.choice(NOUNS)
    makers = {
        "noun": lambda: noun, "Noun": noun.capitalize, "other": lambda: rng.choice(NOUNS),
        "version": lambda: f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        "char": lambda: rng.choice(["an apostrophe", "an emoji", "a slash", "an ampersand"]),
        "company": fake.company, "browser": lambda: rng.choice(BROWSERS),
        "lib": lambda: rng.choice(["openssl", "django", "react", "pydantic", "postgres",
                                   "redis", "nginx"]),
        "country": fake.country, "name": fake.name,
        "sentence": lambda: fake.sentence(nb_words=10),
        "sentence2": lambda: fake.sentence(nb_words=8),
        "impact": lambda: rng.choice(["low", "moderate", "high"]),
        "n": lambda: str(rng.randint(100, 9999)),
    }
    values = dict(extra)
    for name in re.findall(r"{(\w+)}", template):
        if name not in values:
            values[name] = makers[name]()
    return template.format(**values)


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _people(fake: Faker, rng: random.Random, teams: list[dict], n: int,
            users: list[dict] | None = None) -> list[dict]:
    """``users`` (none by default) and new users up to ``n``, all on the company's domain."""
    users = list(users or [])
    domain = users[0]["email"].split("@", 1)[1] if users else fake.domain_name()
    emails = {u["email"] for u in users}
    while len(users) < n:
        first, last = fake.first_name(), fake.last_name()
        email = re.sub(r"[^a-z.]", "", f"{first}.{last}".lower()) + "@" + domain
        if email in emails:
            continue
        emails.add(email)
        # the first len(teams) users give every team a member (its lead)
        team = teams[len(users)]["slug"] if len(users) < len(teams) else rng.choice(teams)["slug"]
        users.append({"id": len(users) + 1, "name": f"{first} {last}", "email": email,
                      "team": team})
    return users


def _tickets(fake: Faker, rng: random.Random, teams: list[dict], users: list[dict],
             n: int, tickets: list[dict] | None = None) -> list[dict]:
    """``tickets`` (none by default) and new tickets up to ``n``, every title unique."""
    members = {t["slug"]: [u["id"] for u in users if u["team"] == t["slug"]] for t in teams}
    tickets = list(tickets or [])
    titles = {t["title"] for t in tickets}
    while len(tickets) < n:
        title = _fill(rng.choice(TITLES), fake, rng)
        if title in titles:
            continue
        titles.add(title)
        team = rng.choice(teams)["slug"]
        status = _weighted(rng, STATUS_WEIGHTS)
        unassigned = rng.random() < (0.45 if status == "open" else 0.1)
        ticket = {
            "id": len(tickets) + 1, "title": title,
            "description": _fill(rng.choice(DESCRIPTIONS), fake, rng),
            "status": status, "priority": _weighted(rng, PRIORITY_WEIGHTS), "team": team,
            "assignee": None if unassigned else rng.choice(members[team]),
            "labels": sorted(rng.sample(LABELS, rng.choice([0, 1, 1, 2, 2, 3]))),
            "parent": None, "escalations": 0,
        }
        parents = [t["id"] for t in tickets if t["team"] == team and t["parent"] is None]
        if parents and rng.random() < 0.15:  # a subtask of an earlier ticket of its team
            ticket["parent"] = rng.choice(parents)
        if ticket["priority"] == "urgent" and rng.random() < 0.5:
            ticket["escalations"] = rng.randint(1, 2)
        tickets.append(ticket)
    return tickets


def _comments(fake: Faker, rng: random.Random, users: list[dict], tickets: list[dict],
              comments: list[dict] | None = None) -> list[dict]:
    """``comments`` (none by default) and new ones on about two in five ``tickets``."""
    comments = list(comments or [])
    for t in rng.sample(tickets, k=len(tickets)):
        if rng.random() > 0.4:
            continue
        team_users = [u["id"] for u in users if u["team"] == t["team"]]
        for _ in range(rng.randint(1, 4)):
            author = rng.choice(team_users if rng.random() < 0.7 else [u["id"] for u in users])
            body = _fill(rng.choice(COMMENTS), fake, rng, ref=str(rng.choice(tickets)["id"]))
            comments.append({"id": len(comments) + 1, "ticket": t["id"], "author": author,
                             "body": body})
    return comments


def _twins(scale: int) -> int:
    """How many distractor twins a family gets at ``scale`` (none at 1)."""
    return 0 if scale <= 1 else max(1, scale // 2)


def _namesakes(rng: random.Random, db: dict, scale: int) -> None:
    """Users with another user's name on another team, under an address of their own
    (``first.last2@...``): a namesake's id is new, so no lead changes."""
    users, slugs = db["users"], [t["slug"] for t in db["teams"]]
    emails = {u["email"] for u in users}
    for u in rng.sample(users, min(len(users), _twins(scale))):
        local, domain = u["email"].split("@", 1)
        n, email = 2, u["email"]
        while email in emails:
            email, n = f"{local}{n}@{domain}", n + 1
        emails.add(email)
        team = rng.choice([s for s in slugs if s != u["team"]] or slugs)
        users.append({"id": len(users) + 1, "name": u["name"], "email": email, "team": team})


def _ticket_twins(rng: random.Random, db: dict, scale: int) -> None:
    """Tickets filed twice: a top-level ticket's title, description, team, priority,
    labels and assignee again under a new id, with another status."""
    tickets = db["tickets"]
    for t in rng.sample([t for t in tickets if t["parent"] is None], _twins(scale)):
        status = rng.choice(sorted(set(STATUS_WEIGHTS) - {t["status"]}))
        tickets.append({**t, "id": len(tickets) + 1, "status": status,
                        "labels": list(t["labels"])})


def _comment_twins(rng: random.Random, db: dict, scale: int) -> None:
    """Comments posted twice: a comment's ticket and body again under a new id, written by
    another member of the ticket's team (another user where the team has one member)."""
    comments, users = db["comments"], db["users"]
    team = {t["id"]: t["team"] for t in db["tickets"]}
    for c in rng.sample(comments, min(len(comments), _twins(scale))):
        others = [u for u in users if u["id"] != c["author"]]
        mates = [u["id"] for u in others if u["team"] == team[c["ticket"]]]
        author = rng.choice(mates or [u["id"] for u in others])
        comments.append({**c, "id": len(comments) + 1, "author": author})


def _scaled(seed: int, scale: int, db: dict) -> None:
    """The hard tier's tracker: users, tickets and comments ``scale`` times as many as at
    scale 1 (the teams stay), with distractor twins, drawn from a stream of their own."""
    fake = Faker("en_US")
    fake.seed_instance(f"{seed}:scale")
    rng = random.Random(f"{seed}:scale")
    teams, base = db["teams"], {k: len(v) for k, v in db.items()}
    db["users"] = _people(fake, rng, teams, scale * base["users"], db["users"])
    _namesakes(rng, db, scale)
    db["tickets"] = _tickets(fake, rng, teams, db["users"], scale * base["tickets"], db["tickets"])
    _ticket_twins(rng, db, scale)
    while len(db["comments"]) < scale * base["comments"]:
        db["comments"] = _comments(fake, rng, db["users"], db["tickets"][base["tickets"]:],
                                   db["comments"])
    _comment_twins(rng, db, scale)


def build_db(seed: int, scale: int = 1) -> dict:
    """The seeded records (the db file's content as a dict); ``scale`` as :func:`generate`."""
    fake = Faker("en_US")  # one instance per call: safe when candidates seed in parallel
    fake.seed_instance(seed)
    rng = random.Random(seed)
    picked = rng.sample(TEAMS, rng.randint(3, 6))
    teams = [{"id": i + 1, "slug": slug, "name": name, "lead": None}
             for i, (slug, name) in enumerate(picked)]
    users = _people(fake, rng, teams, rng.randint(8, 20))
    for t in teams:
        t["lead"] = min(u["id"] for u in users if u["team"] == t["slug"])
    tickets = _tickets(fake, rng, teams, users, rng.randint(20, 60))
    comments = _comments(fake, rng, users, tickets)
    db = {"comments": comments, "teams": teams, "tickets": tickets, "users": users}
    if scale > 1:
        _scaled(seed, scale, db)
    return db


@functools.cache
def _doc() -> str:
    return (f"# Ticket service\n\nA ticket tracker runs at {BASE_URL} (JSON over HTTP; use curl).\n"
            f"Its records live in `{DB_PATH}`; change them through the API.\n\n```\n"
            f"{api_reference()}\n```\n")


def generate(seed: int, scale: int = 1) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds.

    ``scale`` > 1 (the hard tier): ``scale`` times the users, tickets and comments, with
    distractor twins (see the module docstring); scale 1 is the tracker as it always was."""
    db = build_db(seed, scale)
    return {
        DB_PATH: (json.dumps(db, indent=1, sort_keys=True) + "\n").encode(),
        DOC_PATH: _doc().encode(),
    }


def layout(seed: int, scale: int = 1) -> list[str]:
    """The seeded paths (the same for every seed and scale), without generating any content."""
    return sorted([DB_PATH, DOC_PATH])
