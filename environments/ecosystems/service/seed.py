"""Deterministic seed state for the ``service`` ecosystem: same seed, same bytes.

Writes the ticket tracker's db file ``.service/db.json`` (read by ``server.py`` on every
request) with 3-6 teams, 8-20 users, 20-60 tickets and their comments, using Faker for
people, companies, versions and prose; plus ``SERVICE.md``, the API reference (the
server's module docstring) for whoever works in the workspace.  Nothing depends on the
clock: ids are 1..n and records carry no timestamps.
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


def _people(fake: Faker, rng: random.Random, teams: list[dict], n: int) -> list[dict]:
    domain = fake.domain_name()
    users, emails = [], set()
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
             n: int) -> list[dict]:
    members = {t["slug"]: [u["id"] for u in users if u["team"] == t["slug"]] for t in teams}
    tickets, titles = [], set()
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


def _comments(fake: Faker, rng: random.Random, users: list[dict],
              tickets: list[dict]) -> list[dict]:
    comments: list[dict] = []
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


def build_db(seed: int) -> dict:
    """The seeded records (the db file's content as a dict)."""
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
    return {"comments": comments, "teams": teams, "tickets": tickets, "users": users}


@functools.cache
def _doc() -> str:
    return (f"# Ticket service\n\nA ticket tracker runs at {BASE_URL} (JSON over HTTP; use curl).\n"
            f"Its records live in `{DB_PATH}`; change them through the API.\n\n```\n"
            f"{api_reference()}\n```\n")


def generate(seed: int) -> dict[str, bytes]:
    """The seeded workspace as ``{relative path: bytes}``; identical for identical seeds."""
    db = build_db(seed)
    return {
        DB_PATH: (json.dumps(db, indent=1, sort_keys=True) + "\n").encode(),
        DOC_PATH: _doc().encode(),
    }


def layout(seed: int) -> list[str]:
    """The seeded paths (the same for every seed), without generating any content."""
    return sorted([DB_PATH, DOC_PATH])
