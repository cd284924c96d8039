"""Execution-time samplers for the ``service`` ecosystem.

Every sampler gets the CURRENT probe output (the parsed dict printed by ``probe.py``:
``tickets``, ``comments``, ``users``, ``teams``), a seeded ``random.Random`` and the
already-resolved arguments it names in ``sample.with`` (as strings), and returns one
literal that exists in (or, for new records, is absent from) that state and makes the
tool call succeed with a non-trivial result.  Ties are broken only by ``rng`` over
sorted candidates, so a rerun picks the same value.  ``LookupError`` means the state
offers nothing suitable.
"""

from __future__ import annotations

import importlib.util
import random
import re
from collections import Counter
from pathlib import Path

from faker import Faker

_spec = importlib.util.spec_from_file_location("taskfactory_service_seed_vocab",
                                               Path(__file__).with_name("seed.py"))
assert _spec and _spec.loader
_seed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_seed)

_server_spec = importlib.util.spec_from_file_location("taskfactory_service_server_rules",
                                                      Path(__file__).with_name("server.py"))
assert _server_spec and _server_spec.loader
_server = importlib.util.module_from_spec(_server_spec)
_server_spec.loader.exec_module(_server)
PRIORITIES, TRANSITIONS = _server.PRIORITIES, _server.TRANSITIONS  # the service's own rules
TICKET_FIELDS = ("title", "status", "priority", "team")
WORD = re.compile(r"[a-z]{4,}")


def _pick(rng: random.Random, options: object, what: str) -> str:
    items = sorted(set(options))
    if not items:
        raise LookupError(f"no {what} in the current state")
    return str(rng.choice(items))


def _ids(keys: object) -> list[str]:
    return [str(k) for k in sorted(int(k) for k in keys)]


def _tickets(state: dict, cond=lambda t: True) -> list[str]:
    tickets = state.get("tickets", {})
    return [k for k in _ids(tickets) if cond(tickets[k])]


def _ticket(state: dict, ticket: str) -> dict:
    try:
        return state["tickets"][str(ticket)]
    except KeyError:
        raise LookupError(f"no ticket {ticket!r}") from None


def _members(state: dict, team: str) -> list[str]:
    return sorted(e for e, u in state.get("users", {}).items() if u["team"] == team)


def _faker(rng: random.Random) -> Faker:
    fake = Faker("en_US")
    fake.seed_instance(rng.getrandbits(32))
    return fake


# ---- new records ----------------------------------------------------------------------

def next_ticket_id(state: dict, rng: random.Random, **_: str) -> str:
    """The id the service gives the next ticket: max existing id + 1."""
    return str(max((int(k) for k in state.get("tickets", {})), default=0) + 1)


def new_title(state: dict, rng: random.Random, **_: str) -> str:
    """A realistic ticket title no ticket has yet."""
    taken = {t["title"] for t in state.get("tickets", {}).values()}
    fake = _faker(rng)
    for _attempt in range(50):
        title = _seed._fill(rng.choice(_seed.TITLES), fake, rng)
        if title not in taken:
            return title
    raise LookupError("could not invent a new ticket title")


def new_user_name(state: dict, rng: random.Random, **_: str) -> str:
    taken = {u["name"] for u in state.get("users", {}).values()}
    fake = _faker(rng)
    for _attempt in range(50):
        name = f"{fake.first_name()} {fake.last_name()}"
        if name not in taken:
            return name
    raise LookupError("could not invent a new user name")


def new_user_email(state: dict, rng: random.Random, name: str = "", **_: str) -> str:
    """first.last@<the company's domain> for ``name``; unused by any user."""
    emails = state.get("users", {})
    domains = Counter(e.split("@", 1)[1] for e in emails)
    domain = min(domains, key=lambda d: (-domains[d], d)) if domains else "example.com"
    local = re.sub(r"[^a-z.]", "", name.lower().replace(" ", ".")).strip(".") or "new.user"
    email = f"{local}@{domain}"
    n = 2
    while email in emails:
        email, n = f"{local}{n}@{domain}", n + 1
    return email


FINDINGS = [c for c in _seed.COMMENTS if c.startswith(("Reproduced", "{company} reported",
                                                        "Looks related", "Added logs",
                                                        "Confirmed with"))]
"""The seeded comments a task's new comment is drawn from: findings about the ticket, which
hold whatever the task does to it next.  A comment taking a decision ("Lowering the
urgency", "Fix is in review", "I can take this one") would contradict a later step that
escalates, closes or reassigns the ticket."""


def comment_body(state: dict, rng: random.Random, **_: str) -> str:
    fake = _faker(rng)
    ref = _pick(rng, state.get("tickets", {}), "ticket")
    return _seed._fill(rng.choice(FINDINGS), fake, rng, ref=ref)


# ---- teams, users, priorities ---------------------------------------------------------

def team(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, state.get("teams", {}), "team")


def priority(state: dict, rng: random.Random, **_: str) -> str:
    return rng.choice(PRIORITIES)


def user_email(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, state.get("users", {}), "user")


def movable_user(state: dict, rng: random.Random, **_: str) -> str:
    """A user who leads no team (moving a lead would leave a team led by an outsider)."""
    leads = {t["lead"] for t in state.get("teams", {}).values()}
    return _pick(rng, [e for e in state.get("users", {}) if e not in leads], "non-lead user")


def other_team(state: dict, rng: random.Random, user: str = "", **_: str) -> str:
    current = state.get("users", {}).get(user, {}).get("team")
    return _pick(rng, [s for s in state.get("teams", {}) if s != current], "other team")


def team_with_open(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, [t["team"] for t in state.get("tickets", {}).values()
                       if t["status"] == "open"], "team with open tickets")


def team_with_tickets(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, [t["team"] for t in state.get("tickets", {}).values()], "team")


def status_in_team(state: dict, rng: random.Random, team: str = "", **_: str) -> str:
    return _pick(rng, [t["status"] for t in state.get("tickets", {}).values()
                       if t["team"] == team], f"status among team {team!r} tickets")


def busy_user(state: dict, rng: random.Random, **_: str) -> str:
    """A user with at least one assigned ticket that is open or in progress."""
    return _pick(rng, [t["assignee"] for t in state.get("tickets", {}).values()
                       if t["assignee"] and t["status"] in ("open", "in_progress")],
                 "user with active tickets")


def used_label(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, [lb for t in state.get("tickets", {}).values() for lb in t["labels"]],
                 "label")


def search_word(state: dict, rng: random.Random, **_: str) -> str:
    """A word of some title found (as a case-insensitive substring of title or
    description) in at least one ticket but at most half of them."""
    tickets = list(state.get("tickets", {}).values())
    hays = [(t["title"] + "\n" + t["description"]).lower() for t in tickets]
    words = {w for t in tickets for w in WORD.findall(t["title"].lower())}
    good = [w for w in words if 1 <= sum(w in h for h in hays) <= max(1, len(hays) // 2)]
    return _pick(rng, good, "selective search word")


# ---- tickets --------------------------------------------------------------------------

def active_ticket(state: dict, rng: random.Random, **_: str) -> str:
    """Any ticket that is not closed."""
    return _pick(rng, _tickets(state, lambda t: t["status"] != "closed"), "active ticket")


def any_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, _tickets(state), "ticket")


def closable_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, _tickets(state, lambda t: t["status"] != "closed"), "closable ticket")


def reopenable_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, _tickets(state, lambda t: t["status"] in ("resolved", "closed")),
                 "resolved or closed ticket")


def assigned_ticket(state: dict, rng: random.Random, **_: str) -> str:
    """An assigned, not yet closed ticket."""
    return _active_with(state, rng, "assignee")


def reassignable_ticket(state: dict, rng: random.Random, **_: str) -> str:
    """An assigned, not closed ticket whose team has a member other than its assignee."""
    def ok(t: dict) -> bool:
        return bool(t["assignee"]) and t["status"] != "closed" and any(
            m != t["assignee"] for m in _members(state, t["team"]))
    return _pick(rng, _tickets(state, ok), "reassignable ticket")


def teammate(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """A member of the ticket's team who is not its current assignee."""
    t = _ticket(state, ticket)
    return _pick(rng, [m for m in _members(state, t["team"]) if m != t["assignee"]],
                 f"teammate for ticket {ticket}")


def next_status(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """A status the ticket may move to from its current one."""
    return rng.choice(TRANSITIONS[_ticket(state, ticket)["status"]])


def new_priority(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    current = _ticket(state, ticket)["priority"]
    return rng.choice([p for p in PRIORITIES if p != current])


def new_label(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """A label used elsewhere (or from the tracker's vocabulary) that the ticket lacks."""
    have = set(_ticket(state, ticket)["labels"])
    used = {lb for t in state.get("tickets", {}).values() for lb in t["labels"]} - have
    return _pick(rng, used or set(_seed.LABELS) - have, "label")


def comment_author(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """A member of the ticket's team (anyone, if the team has no members)."""
    members = _members(state, _ticket(state, ticket)["team"])
    return _pick(rng, members or state.get("users", {}), "comment author")


def commented_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, [k for k, v in state.get("comments", {}).items() if v],
                 "ticket with comments")


def ticket_field(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """A field of the ticket with a non-empty value: a core field, ``assignee_email`` when
    assigned, ``escalations`` when escalated at least once."""
    t = _ticket(state, ticket)
    fields = list(TICKET_FIELDS)
    if t["assignee"]:
        fields.append("assignee_email")
    if t.get("escalations"):
        fields.append("escalations")
    return rng.choice(fields)


def open_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, _tickets(state, lambda t: t["status"] == "open"), "open ticket")


def resolvable_ticket(state: dict, rng: random.Random, **_: str) -> str:
    return _pick(rng, _tickets(state, lambda t: t["status"] in ("open", "in_progress")),
                 "open or in-progress ticket")


def labelled_ticket(state: dict, rng: random.Random, **_: str) -> str:
    """A ticket that is not closed and has at least one label."""
    return _active_with(state, rng, "labels")


def _active_with(state: dict, rng: random.Random, field: str) -> str:
    """A ticket that is not closed and whose ``field`` is set (non-empty)."""
    return _pick(rng, _tickets(state, lambda t: t[field] and t["status"] != "closed"),
                 f"active ticket with {field}")


def current_label(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    return _pick(rng, _ticket(state, ticket)["labels"], f"label on ticket {ticket}")


def ticket_team(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    """The ticket's own team (a subtask stays with its parent's team)."""
    return _ticket(state, ticket)["team"]


def other_ticket_team(state: dict, rng: random.Random, ticket: str = "", **_: str) -> str:
    current = _ticket(state, ticket)["team"]
    return _pick(rng, [s for s in state.get("teams", {}) if s != current], "other team")


def user_team(state: dict, rng: random.Random, user: str = "", **_: str) -> str:
    """The team of ``user``, when the user does not lead it yet."""
    slug = state.get("users", {}).get(user, {}).get("team")
    if slug is None:
        raise LookupError(f"no user {user!r}")
    if state["teams"][slug]["lead"] == user:
        raise LookupError(f"{user} already leads team {slug}")
    return slug


# ---- describers: the distinguishing value of a seeded entry ------------------------------

def ticket_title(state: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The title of ticket ``value`` (a describer resolves it back to the id)."""
    return str(_ticket(state, value)["title"])


def user_name(state: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The name of the user with email ``value``."""
    user = state.get("users", {}).get(value)
    if user is None:
        raise LookupError(f"no user {value!r}")
    return str(user["name"])


def team_lead_name(state: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The name of the user who leads team ``value``."""
    team = state.get("teams", {}).get(value)
    lead = state.get("users", {}).get(team["lead"]) if team and team.get("lead") else None
    if lead is None:
        raise LookupError(f"team {value!r} has no lead")
    return str(lead["name"])
