"""The ``service`` ecosystem without Docker: spec, seed, probe, samplers and the server.

The server is exercised for real: started in-process on an ephemeral loopback port over a
seeded db file, and driven over HTTP with urllib.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from environments.ecosystems import load_ecosystem
from tasks.core.commands import render_command

ECO = load_ecosystem("service")
SEEDS = range(25)


def _server_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("service_server_under_test",
                                                  ECO.folder / "server.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SERVER = _server_module()


def _db(seed: int) -> dict:
    return json.loads(ECO.seed_state(seed)[".service/db.json"])


def _write_state(root: Path, seed: int) -> None:
    for path, data in ECO.seed_state(seed).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


def _probe(root: Path) -> dict:
    done = subprocess.run([sys.executable, "-"], input=ECO.probe_source, cwd=root,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# ---- spec -----------------------------------------------------------------------------

def test_spec_loads_with_service_image_and_sections():
    spec = ECO.spec
    assert len(spec.tools) >= 10
    assert spec.backends == ["docker"]
    assert spec.image.support == ["server.py"] and (ECO.folder / "server.py").is_file()
    assert "/opt/taskfactory/service/server.py" in spec.service.start
    assert "/health" in spec.service.ready
    assert set(spec.probe_sections) == {"tickets", "comments", "users", "teams"}
    assert all(s.strict for s in spec.probe_sections.values())
    writes = [t for t in spec.tools if t.effect == "write"]
    assert writes and all(t.returns.from_param for t in writes)
    joins = [t for t in spec.tools if sum(p.typed for p in t.params) >= 2]
    assert [t.name for t in joins] == ["assign_ticket"]
    for t in spec.tools:
        assert "curl -sSf" in t.command and "jq" not in t.command
        for p in t.params:
            assert p.sample is None or p.sample.of is None  # samplers read the probe state


def test_layout_matches_generated_paths():
    assert ECO.state_paths(3) == sorted(ECO.seed_state(3))


# ---- seed -----------------------------------------------------------------------------

def test_same_seed_same_bytes_different_seed_different_bytes():
    assert ECO.seed_state(7) == ECO.seed_state(7)
    assert ECO.seed_state(7) != ECO.seed_state(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_seeded_records_are_consistent_and_realistic(seed):
    db = _db(seed)
    teams, users, tickets, comments = db["teams"], db["users"], db["tickets"], db["comments"]
    assert 3 <= len(teams) <= 6 and 8 <= len(users) <= 20 and 20 <= len(tickets) <= 60
    for kind in (teams, users, tickets, comments):
        assert [r["id"] for r in kind] == list(range(1, len(kind) + 1))
    emails = [u["email"] for u in users]
    assert len(set(emails)) == len(emails) and all("@" in e and " " not in e for e in emails)
    slugs = {t["slug"] for t in teams}
    assert {u["team"] for u in users} <= slugs
    by_id = {u["id"]: u for u in users}
    for t in teams:
        assert by_id[t["lead"]]["team"] == t["slug"]
    assert len({t["title"] for t in tickets}) == len(tickets)
    for t in tickets:
        assert t["status"] in SERVER.STATUSES and t["priority"] in SERVER.PRIORITIES
        assert t["team"] in slugs and t["labels"] == sorted(set(t["labels"]))
        assert t["assignee"] is None or by_id[t["assignee"]]["team"] == t["team"]
        assert t["title"] and t["description"]
        assert t["escalations"] == 0 or t["priority"] == "urgent"
        parent = t["parent"] and tickets[t["parent"] - 1]
        assert parent is None or (parent["id"] < t["id"] and parent["team"] == t["team"])
    assert all(c["author"] in by_id and 1 <= c["ticket"] <= len(tickets) for c in comments)
    assert not any(k in json.dumps(db) for k in ("created", "updated", "timestamp"))


def test_seed_varies_across_seeds():
    sizes = {(len(d["teams"]), len(d["users"]), len(d["tickets"])) for d in map(_db, SEEDS)}
    statuses = Counter(t["status"] for s in SEEDS for t in _db(s)["tickets"])
    assert len(sizes) > 15 and set(statuses) == set(SERVER.STATUSES)


def test_service_doc_is_the_server_docstring():
    doc = ECO.seed_state(1)["SERVICE.md"].decode()
    assert "http://127.0.0.1:8080" in doc and "PUT /tickets/<id>/status" in doc


# ---- probe ----------------------------------------------------------------------------

def test_probe_is_canonical_and_names_people_by_email(tmp_path):
    _write_state(tmp_path, 4)
    first = subprocess.run([sys.executable, "-"], input=ECO.probe_source, cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    second = subprocess.run([sys.executable, "-"], input=ECO.probe_source, cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert first == second and first.count("\n") == 1
    state = json.loads(first)
    db = _db(4)
    assert set(state["tickets"]) == {str(t["id"]) for t in db["tickets"]}
    assert set(state["users"]) == {u["email"] for u in db["users"]}
    emails = set(state["users"])
    for t in state["tickets"].values():
        assert t["assignee"] is None or t["assignee"] in emails
    assert all(c["author"] in emails for cs in state["comments"].values() for c in cs)
    assert all(t["lead"] in emails for t in state["teams"].values())


# ---- server ---------------------------------------------------------------------------

@pytest.fixture
def api(tmp_path):
    """A real server over a seeded db; yields (call, db_path)."""
    _write_state(tmp_path, 11)
    db_path = tmp_path / ".service/db.json"
    handler = type("H", (SERVER.Handler,), {"store": SERVER.Store(str(db_path))})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def call(method: str, path: str, body: object = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    yield call, db_path
    server.shutdown()
    server.server_close()


def test_create_ticket_gets_max_plus_one_and_is_written_atomically(api):
    call, db_path = api
    n = len(_db(11)["tickets"])
    team = _db(11)["teams"][0]["slug"]
    status, t = call("POST", "/tickets", {"title": "New thing", "team": team})
    assert status == 201 and t["id"] == n + 1 and t["status"] == "open"
    assert t["assignee"] is None and t["labels"] == [] and t["priority"] == "medium"
    assert t["escalations"] == 0 and t["parent"] is None
    status, sub = call("POST", "/tickets", {"title": "Sub", "team": team, "parent": n + 1})
    assert status == 201 and sub["parent"] == n + 1 and sub["id"] == n + 2
    assert call("GET", f"/tickets?parent={n + 1}")[1]["count"] == 1
    stored = json.loads(db_path.read_text())
    assert stored["tickets"][-1]["id"] == n + 2
    assert [p.name for p in db_path.parent.iterdir()] == ["db.json"]  # no temp file left
    status, again = call("POST", "/tickets", {"id": n + 2, "title": "x", "team": t["team"]})
    assert status == 409 and "exists" in again["error"]


def test_every_request_reads_the_db_file(api, tmp_path):
    call, db_path = api
    before = call("GET", "/tickets")[1]["count"]
    db = json.loads(db_path.read_text())
    db["tickets"] = db["tickets"][:3]
    db_path.write_text(json.dumps(db))  # e.g. a snapshot restore, no restart
    assert call("GET", "/tickets")[1]["count"] == 3 != before


def test_status_transitions_are_validated(api):
    call, _ = api
    db = _db(11)
    closed = next(t for t in db["tickets"] if t["status"] == "closed")
    assert call("PUT", f"/tickets/{closed['id']}/status", {"status": "resolved"})[0] == 409
    assert call("PUT", f"/tickets/{closed['id']}/status", {"status": "closed"})[0] == 409
    assert call("PUT", f"/tickets/{closed['id']}/status", {"status": "done"})[0] == 400
    status, t = call("PUT", f"/tickets/{closed['id']}/status", {"status": "open"})
    assert status == 200 and t["status"] == "open"


def test_errors_are_json_with_4xx(api):
    call, _ = api
    assert call("GET", "/tickets/9999")[0] == 404
    assert call("GET", "/nowhere")[0] == 404
    assert call("DELETE", "/tickets")[0] == 405
    assert call("POST", "/tickets", {"title": "x", "team": "no-such-team"})[0] == 404
    assert call("PUT", "/tickets/1/assignee", {"user": "nobody@nowhere.test"})[0] == 404
    assert call("PUT", "/tickets/1/assignee", {})[0] == 400
    assert call("POST", "/users", {"name": "A", "email": "bad", "team": "x"})[0] == 400
    status, body = call("GET", "/stats?by=colour")
    assert status == 400 and "error" in body


def test_filters_assign_comment_escalate(api):
    call, _ = api
    db = _db(11)
    team = db["teams"][0]
    want = [t["id"] for t in db["tickets"] if t["team"] == team["slug"]
            and t["status"] in ("open", "in_progress")]
    got = call("GET", f"/tickets?team={team['slug']}&status=open,in_progress")[1]
    assert [t["id"] for t in got["tickets"]] == want and got["count"] == len(want)
    member = next(u for u in db["users"] if u["id"] != team["lead"])
    status, t = call("PUT", "/tickets/1/assignee", {"user": member["email"]})
    assert status == 200 and t["assignee"] == member["id"]
    assert t["assignee_email"] == member["email"]
    status, c = call("POST", "/tickets/1/comments", {"author": member["id"], "body": " hi "})
    assert status == 201 and c["body"] == "hi" and c["id"] == len(db["comments"]) + 1
    status, t = call("POST", "/tickets/1/escalate")
    lead = next(t2 for t2 in db["teams"] if t2["slug"] == t["team"])["lead"]
    assert status == 200 and t["priority"] == "urgent" and t["assignee"] == lead
    assert t["escalations"] == db["tickets"][0]["escalations"] + 1
    assert call("POST", "/tickets/1/escalate")[1]["escalations"] == t["escalations"] + 1
    outsider = next(u for u in db["users"] if u["team"] != team["slug"])
    assert call("PUT", f"/teams/{team['slug']}/lead", {"user": outsider["email"]})[0] == 409
    mate = next(u for u in db["users"] if u["team"] == team["slug"])
    status, led = call("PUT", f"/teams/{team['slug']}/lead", {"user": mate["email"]})
    assert status == 200 and led["lead"] == mate["id"]
    stats = call("GET", "/stats?by=status")[1]
    assert stats["total"] == len(db["tickets"]) == sum(stats["counts"].values())


# ---- samplers and commands ------------------------------------------------------------

def _state(tmp_path: Path, seed: int) -> dict:
    _write_state(tmp_path, seed)
    return _probe(tmp_path)


def test_samplers_pick_values_that_exist_and_matter(tmp_path):
    state = _state(tmp_path, 6)
    rng = random.Random(0)
    tickets, users = state["tickets"], state["users"]
    assert ECO.sample("next_ticket_id", state, rng) == str(max(map(int, tickets)) + 1)
    assert ECO.sample("new_title", state, rng) not in {t["title"] for t in tickets.values()}
    name = ECO.sample("new_user_name", state, rng)
    email = ECO.sample("new_user_email", state, rng, name=name)
    assert email not in users and email.split("@")[0] == name.lower().replace(" ", ".")
    for _ in range(20):
        ticket = ECO.sample("reassignable_ticket", state, rng)
        mate = ECO.sample("teammate", state, rng, ticket=ticket)
        assert users[mate]["team"] == tickets[ticket]["team"] != ""
        assert mate != tickets[ticket]["assignee"] and tickets[ticket]["assignee"]
        status = ECO.sample("next_status", state, rng, ticket=ticket)
        assert status in SERVER.TRANSITIONS[tickets[ticket]["status"]]
        label = ECO.sample("new_label", state, rng, ticket=ticket)
        assert label not in tickets[ticket]["labels"]
        word = ECO.sample("search_word", state, rng)
        hits = [t for t in tickets.values()
                if word in (t["title"] + "\n" + t["description"]).lower()]
        assert 1 <= len(hits) <= len(tickets) // 2
        user = ECO.sample("movable_user", state, rng)
        assert user not in {t["lead"] for t in state["teams"].values()}
        assert ECO.sample("other_team", state, rng, user=user) != users[user]["team"]
        team = ECO.sample("team_with_tickets", state, rng)
        st = ECO.sample("status_in_team", state, rng, team=team)
        assert any(t["team"] == team and t["status"] == st for t in tickets.values())
        busy = ECO.sample("busy_user", state, rng)
        assert any(t["assignee"] == busy and t["status"] in ("open", "in_progress")
                   for t in tickets.values())
        assert state["comments"][ECO.sample("commented_ticket", state, rng)]


def test_samplers_are_deterministic_and_raise_lookup_error(tmp_path):
    state = _state(tmp_path, 2)
    picks = [ECO.sample("comment_body", state, random.Random(5)) for _ in range(2)]
    assert picks[0] == picks[1]
    # a new comment states a finding, never a decision a later step could contradict
    drawn = {ECO.sample("comment_body", state, random.Random(i)) for i in range(60)}
    assert len(drawn) > 5 and not [c for c in drawn if c.startswith((
        "Lowering the urgency", "Fix is in review", "I can take", "Waiting on",
        "Could not reproduce"))]
    for t in state["tickets"].values():
        t["status"] = "open"
    with pytest.raises(LookupError):
        ECO.sample("reopenable_ticket", state, random.Random(0))


@pytest.mark.parametrize("tool", [t.name for t in ECO.spec.tools])
def test_every_command_renders_with_sampled_arguments(tmp_path, tool):
    state = _state(tmp_path, 9)
    spec = ECO.spec.tool(tool)
    leads = {t["lead"] for t in state["teams"].values()}
    args = {"ticket": "3", "user": next(e for e in state["users"] if e not in leads),
            "team": min(state["teams"])}
    for p in spec.params:
        if p.sample:
            context = {w: args[w] for w in p.sample.with_}
            args[p.name] = ECO.sample(p.sample.facet, state, random.Random(1), **context)
    command = render_command(spec, {p.name: args[p.name] for p in spec.params})
    assert command.startswith("curl -sSf ") and "127.0.0.1:8080" in command
    assert "{{" not in command
