"""The ``service`` ecosystem in real containers: the pipeline end to end, and every tool
run by hand against the live server on a seeded state (output and exact record changes).
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import load_ecosystem
from flows.run.providers import close_run, provider_for
from tasks.core.commands import render_command, render_shell
from tests.support.candidates import build_planned

pytestmark = pytest.mark.docker

ECO = load_ecosystem("service")
RUN_ID = f"itest-eco-service-{os.getpid()}"  # unique: other checkouts may share the engine
SEED = 11
DB = json.loads(ECO.seed_state(SEED)[".service/db.json"])


@pytest.fixture(scope="module")
def config():
    yield DockerConfig()
    close_run(RUN_ID)


# ---- the pipeline ---------------------------------------------------------------------

def test_pipeline_accepts_most_candidates(config):
    accepted, rejected = build_planned(ECO, 15, config, RUN_ID, workers=4)
    assert len(accepted) >= 13, rejected
    tools = Counter(t for task in accepted for t in task.tools)
    writes = {t.name for t in ECO.spec.tools if t.effect == "write"}
    assert writes & set(tools), f"no accepted task changes a record: {dict(tools)}"


# ---- every tool by hand ---------------------------------------------------------------

TEAM = DB["teams"][0]
USERS = {u["id"]: u for u in DB["users"]}
EMAIL = {uid: u["email"] for uid, u in USERS.items()}
LEADS = {t["lead"] for t in DB["teams"]}


def _ticket(cond):
    return next(t for t in DB["tickets"] if cond(t))


def _probe_ticket(t: dict, **changes) -> dict:
    view = {"title": t["title"], "description": t["description"], "status": t["status"],
            "priority": t["priority"], "team": t["team"], "assignee": EMAIL.get(t["assignee"]),
            "labels": t["labels"], "parent": t["parent"], "escalations": t["escalations"]}
    return {**view, **changes}


def _comments(tid: int) -> list[dict]:
    return [{"author": EMAIL[c["author"]], "body": c["body"]}
            for c in DB["comments"] if c["ticket"] == tid]


def _ids(cond) -> str:
    return "\n".join(str(t["id"]) for t in DB["tickets"] if cond(t))


def _cases() -> dict[str, tuple[dict, str, dict]]:
    """tool -> (args, expected stdout, expected probe changes {(section, key): value})."""
    team_status = Counter(t["status"] for t in DB["tickets"] if t["team"] == TEAM["slug"])
    status = min(team_status, key=lambda s: (-team_status[s], s))
    labels = Counter(lb for t in DB["tickets"] for lb in t["labels"])
    label = min(labels, key=lambda lb: (-labels[lb], lb))
    word = "page"
    open_team = _ticket(lambda t: t["status"] == "open")["team"]
    busy = _ticket(lambda t: t["assignee"] and t["status"] in ("open", "in_progress"))["assignee"]
    commented = DB["comments"][0]["ticket"]
    new_id = len(DB["tickets"]) + 1
    mover = next(u for u in DB["users"] if u["id"] not in LEADS)
    other = next(t["slug"] for t in DB["teams"] if t["slug"] != mover["team"])
    assigned = _ticket(lambda t: t["assignee"] and t["status"] != "closed"
                       and any(u["team"] == t["team"] and u["id"] != t["assignee"]
                               for u in DB["users"]))
    mate = next(u for u in DB["users"]
                if u["team"] == assigned["team"] and u["id"] != assigned["assignee"])
    opened = _ticket(lambda t: t["status"] == "open")
    closed = _ticket(lambda t: t["status"] == "closed")
    unlabelled = _ticket(lambda t: "docs" not in t["labels"] and t["status"] != "closed")
    t1, t2 = DB["tickets"][0], DB["tickets"][1]
    lead_of = {t["slug"]: EMAIL[t["lead"]] for t in DB["teams"]}
    new_prio = "low" if t2["priority"] != "low" else "high"
    author = DB["users"][-1]["email"]
    n_comments = Counter(c["ticket"] for c in DB["comments"])
    discussed = min((t["id"] for t in DB["tickets"] if t["status"] == "open"),
                    key=lambda i: (-n_comments[i], i))
    active = Counter(EMAIL[t["assignee"]] for t in DB["tickets"] if t["assignee"]
                     and t["assignee"] not in LEADS and t["status"] in ("open", "in_progress"))
    busiest = min(active, key=lambda e: (-active[e], e))
    labelled = _ticket(lambda t: t["labels"])
    t1_other = next(t["slug"] for t in DB["teams"] if t["slug"] != t1["team"])
    team_of = {t["slug"]: t for t in DB["teams"]}
    return {
        "most_discussed_open_ticket": ({}, str(discussed), {}),
        "busiest_assignee": ({}, busiest, {}),
        "search_tickets": ({"team": TEAM["slug"], "status": status},
                           _ids(lambda t: t["team"] == TEAM["slug"] and t["status"] == status), {}),
        "search_text": ({"text": word.upper()},
                        _ids(lambda t: word in (t["title"] + "\n" + t["description"]).lower()),
                        {}),
        "count_labelled": ({"label": label}, str(labels[label]), {}),
        "count_open_tickets": ({"team": open_team}, str(sum(
            t["team"] == open_team and t["status"] == "open" for t in DB["tickets"])), {}),
        "count_active_assigned": ({"user": EMAIL[busy]}, str(sum(
            t["assignee"] == busy and t["status"] in ("open", "in_progress")
            for t in DB["tickets"])), {}),
        "user_id": ({"user": DB["users"][3]["email"]}, "4", {}),
        "team_members": ({"team": TEAM["slug"]}, "\n".join(
            u["email"] for u in DB["users"] if u["team"] == TEAM["slug"]), {}),
        "count_comments": ({"ticket": str(commented)}, str(len(_comments(commented))), {}),
        "ticket_field": ({"ticket": "1", "field": "title"}, t1["title"], {}),
        "user_team": ({"user": mover["email"]}, mover["team"], {}),
        "user_active_tickets": ({"user": EMAIL[busy]}, str(sum(
            t["assignee"] == busy and t["status"] in ("open", "in_progress")
            for t in DB["tickets"])), {}),
        "team_lead": ({"team": TEAM["slug"]}, lead_of[TEAM["slug"]], {}),
        "team_open_tickets": ({"team": open_team}, str(sum(
            t["team"] == open_team and t["status"] == "open" for t in DB["tickets"])), {}),
        "create_ticket": (
            {"ticket": str(new_id), "title": "Broken CSV export", "team": TEAM["slug"],
             "priority": "high"}, str(new_id),
            {("tickets", str(new_id)): {"title": "Broken CSV export", "description": "",
                                        "status": "open", "priority": "high",
                                        "team": TEAM["slug"], "assignee": None, "labels": [],
                                        "parent": None, "escalations": 0}}),
        "create_user": (
            {"name": "Ada Lovelace", "user": "ada.lovelace@example.org", "team": TEAM["slug"]},
            "ada.lovelace@example.org",
            {("users", "ada.lovelace@example.org"): {"name": "Ada Lovelace",
                                                     "team": TEAM["slug"]}}),
        "move_user": ({"user": mover["email"], "team": other}, mover["email"],
                      {("users", mover["email"]): {"name": mover["name"], "team": other}}),
        "assign_ticket": ({"ticket": "1", "user": author}, "1",
                          {("tickets", "1"): _probe_ticket(t1, assignee=author)}),
        "reassign_ticket": ({"ticket": str(assigned["id"]), "user": mate["email"]},
                            str(assigned["id"]),
                            {("tickets", str(assigned["id"])):
                             _probe_ticket(assigned, assignee=mate["email"])}),
        "unassign_ticket": ({"ticket": str(assigned["id"])}, str(assigned["id"]),
                            {("tickets", str(assigned["id"])):
                             _probe_ticket(assigned, assignee=None)}),
        "set_status": ({"ticket": str(opened["id"]), "status": "in_progress"}, str(opened["id"]),
                       {("tickets", str(opened["id"])):
                        _probe_ticket(opened, status="in_progress")}),
        "close_ticket": ({"ticket": str(opened["id"])}, str(opened["id"]),
                         {("tickets", str(opened["id"])): _probe_ticket(opened, status="closed")}),
        "reopen_ticket": ({"ticket": str(closed["id"])}, str(closed["id"]),
                          {("tickets", str(closed["id"])): _probe_ticket(closed, status="open")}),
        "set_priority": ({"ticket": "2", "priority": new_prio}, "2",
                         {("tickets", "2"): _probe_ticket(t2, priority=new_prio)}),
        "add_label": ({"ticket": str(unlabelled["id"]), "label": "docs"}, str(unlabelled["id"]),
                      {("tickets", str(unlabelled["id"])): _probe_ticket(
                          unlabelled, labels=sorted([*unlabelled["labels"], "docs"]))}),
        "comment_ticket": ({"ticket": "2", "author": author, "body": "Reproduced on staging."},
                           "2", {("comments", "2"): [*_comments(2), {
                               "author": author, "body": "Reproduced on staging."}]}),
        "start_work": ({"ticket": str(opened["id"])}, str(opened["id"]),
                       {("tickets", str(opened["id"])):
                        _probe_ticket(opened, status="in_progress")}),
        "resolve_ticket": ({"ticket": str(opened["id"])}, str(opened["id"]),
                           {("tickets", str(opened["id"])):
                            _probe_ticket(opened, status="resolved")}),
        "remove_label": ({"ticket": str(labelled["id"]), "label": labelled["labels"][0]},
                         str(labelled["id"]), {("tickets", str(labelled["id"])): _probe_ticket(
                             labelled, labels=labelled["labels"][1:])}),
        "retitle_ticket": ({"ticket": "1", "title": "Renamed: cart totals"}, "1",
                           {("tickets", "1"): _probe_ticket(t1, title="Renamed: cart totals")}),
        "move_ticket": ({"ticket": "1", "team": t1_other}, "1",
                        {("tickets", "1"): _probe_ticket(t1, team=t1_other)}),
        "create_subtask": (
            {"ticket": "1", "subtask": str(new_id), "title": "Split the fix", "team": t1["team"]},
            str(new_id),
            {("tickets", str(new_id)): {"title": "Split the fix", "description": "",
                                        "status": "open", "priority": "medium",
                                        "team": t1["team"], "assignee": None, "labels": [],
                                        "parent": 1, "escalations": 0}}),
        "make_team_lead": ({"user": mover["email"], "team": mover["team"]}, mover["team"],
                           {("teams", mover["team"]): {"name": team_of[mover["team"]]["name"],
                                                       "lead": mover["email"]}}),
        "escalate_ticket": ({"ticket": "1"}, "1", {("tickets", "1"): _probe_ticket(
            t1, priority="urgent", assignee=lead_of[t1["team"]],
            escalations=t1["escalations"] + 1)}),
    }


CASES = _cases()
KEY_FIELD = {"service.ticket": "id", "service.user": "email", "service.team": "slug"}
"""The field of the record a write prints that holds its key, by the key's type."""


@pytest.fixture(scope="module")
def live(config):
    """One container on the seeded state with the server up; yields (sandbox, snapshot)."""
    from environments.docker.images import ecosystem_image

    with provider_for(ecosystem_image(ECO, config), RUN_ID).sandbox() as sb:
        sb.write_files(ECO.seed_state(SEED))
        svc = ECO.spec.service
        # start and wait in ONE exec: the server must leave the exec's process group
        # (setsid) before the exec ends and its group is killed
        started = sb.exec(["bash", "-c", f"setsid nohup {svc.start} >/tmp/service.log 2>&1 "
                           f"</dev/null & for _ in $(seq 100); do {svc.ready} >/dev/null "
                           "&& exit 0; sleep 0.1; done; cat /tmp/service.log >&2; exit 1"],
                          timeout=30)
        assert started.exit_code == 0, started.stderr
        yield sb, sb.snapshot()


def _probe(sb) -> dict:
    done = sb.exec(["python3", "-"], stdin=ECO.probe_source.encode())
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)


def _changes(before: dict, after: dict) -> dict:
    return {(section, key): after[section].get(key)
            for section in after for key in set(before[section]) | set(after[section])
            if before[section].get(key) != after[section].get(key)}


def test_every_tool_has_a_case():
    # the repair tools run against their planted faults: tests/integration/test_fault_injectors.py
    assert set(CASES) == {t.name for t in ECO.spec.tools if not t.repair}


@pytest.mark.parametrize("tool", sorted(CASES))
def test_tool_by_hand(live, tool):
    sb, snap = live
    sb.restore(snap)
    args, want_stdout, want_changes = CASES[tool]
    before = _probe(sb)
    spec = ECO.spec.tool(tool)
    done = sb.exec(["bash", "-c", render_command(spec, args)], timeout=20)
    assert done.exit_code == 0, done.stderr
    if spec.effect == "write":  # it prints the record the service sends back
        record = json.loads(done.stdout)
        field = "ticket" if tool == "comment_ticket" else KEY_FIELD[spec.returns.type]
        assert str(record[field]) == want_stdout == str(args[spec.returns.from_param])
    else:
        assert done.stdout.rstrip("\n") == want_stdout
    assert _changes(before, _probe(sb)) == want_changes


@pytest.mark.parametrize("tool", sorted(t for t in CASES if ECO.spec.tool(t).alternatives))
def test_every_alternative_by_hand(live, tool):
    # the alternative control's routes: a read prints what the command prints, a write
    # changes what the command changes
    sb, snap = live
    args, want_stdout, want_changes = CASES[tool]
    for alternative in ECO.spec.tool(tool).alternatives:
        sb.restore(snap)
        before = _probe(sb)
        done = sb.exec(["bash", "-c", render_shell(alternative, args)], timeout=20)
        assert done.exit_code == 0, (alternative, done.stderr)
        if ECO.spec.tool(tool).effect == "read":
            assert done.stdout.rstrip("\n") == want_stdout, alternative
        assert _changes(before, _probe(sb)) == want_changes, alternative


def test_disallowed_transition_fails_and_changes_nothing(live):
    sb, snap = live
    sb.restore(snap)
    closed = _ticket(lambda t: t["status"] == "closed")
    before = _probe(sb)
    args = {"ticket": str(closed["id"]), "status": "resolved"}
    done = sb.exec(["bash", "-c", render_command(ECO.spec.tool("set_status"), args)])
    assert done.exit_code != 0 and "409" in done.stderr
    assert _probe(sb) == before


def test_a_container_the_server_answered_in_is_reused(config):
    # the server lets its clients close first, so no connection on its port is left in
    # TIME_WAIT, and the container's reset finds it clean (DockerConfig.reuse)
    from environments.docker.images import ecosystem_image
    from tasks.execute.realize import realize

    run_id = f"{RUN_ID}-reuse"
    try:
        provider = provider_for(ecosystem_image(ECO, config), run_id)
        with provider.sandbox() as sb:
            realize(sb, ECO, SEED)
            done = sb.exec(["bash", "-c", "curl -sSf http://127.0.0.1:8080/teams >/dev/null && "
                            "python3 -c 'import urllib.request as u; "
                            "u.urlopen(\"http://127.0.0.1:8080/tickets/1\").read()'"])
            assert done.exit_code == 0, done.stderr
            first = sb.container_id
        with provider.sandbox() as sb:
            assert sb.container_id == first
    finally:
        close_run(run_id)
