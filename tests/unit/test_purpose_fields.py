"""A write step that sets again a field of a record an earlier step of the task set is
purposeless (created with one title then retitled; closed then reopened), a step that
changes other fields is not."""

from environments.ecosystems import load_ecosystem
from tasks.execute.purpose import Written, purposeless

SERVICE = load_ecosystem("service")
RETITLE = SERVICE.spec.tool("retitle_ticket")


def _state(ticket):
    return {"tickets": {"7": ticket}} if ticket is not None else {"tickets": {}}


def test_a_field_an_earlier_step_set_from_its_arguments_is_not_set_again():
    created = {"title": "Old", "status": "open", "team": "core"}
    create = Written("s1", ("tickets", "7"), _state(None), _state(created),
                     args=("7", "Old", "core"))
    retitled = {**created, "title": "New"}
    why = purposeless(SERVICE, RETITLE, {"ticket": "7", "title": "New"}, _state(created),
                      _state(retitled), [create])
    assert why == "it overwrites the title of tickets/7 that step s1 set"


def test_changing_a_default_the_creation_left_open_is_work():
    created = {"title": "Old", "status": "open", "team": "core", "assignee": None}
    create = Written("s1", ("tickets", "7"), _state(None), _state(created),
                     args=("7", "Old", "core"), settled=("status",))
    assigned = {**created, "assignee": 4}
    assert purposeless(SERVICE, RETITLE, {"ticket": "7", "title": "Old"}, _state(created),
                       _state(assigned), [create]) is None


def test_a_default_the_creation_settles_is_not_changed_next():
    """A new ticket is open (``returns.settles: [status]``): resolving it at once is no job.
    Before, a default counted as nobody's choice and the step passed."""
    created = {"title": "Old", "status": "open", "team": "core", "assignee": None}
    create = Written("s1", ("tickets", "7"), _state(None), _state(created),
                     args=("7", "Old", "core"),
                     settled=tuple(SERVICE.spec.tool("create_ticket").returns.settles))
    closed = {**created, "status": "closed"}
    why = purposeless(SERVICE, RETITLE, {"ticket": "7", "title": "Old"}, _state(created),
                      _state(closed), [create])
    assert why == "it overwrites the status of tickets/7 that step s1 set"


def test_a_change_in_place_then_another_of_the_same_field_is_purposeless():
    seeded = {"title": "A", "status": "open"}
    closed = {**seeded, "status": "closed"}
    close = Written("s1", ("tickets", "7"), _state(seeded), _state(closed), args=("7",))
    escalated = {**closed, "status": "open", "priority": "urgent"}
    why = purposeless(SERVICE, RETITLE, {"ticket": "7"}, _state(closed), _state(escalated),
                      [close])
    assert why == "it overwrites the status of tickets/7 that step s1 set"


GIT = load_ecosystem("git")


def _branches(**tips):
    return {"branches": {k.replace("_", "/"): v for k, v in tips.items()}, "tags": {}}


def test_a_new_branch_moved_back_onto_the_branch_it_was_made_from_is_undone_work():
    """Pick a commit onto a new branch off ``docs/milk``, commit on it, then rewind it by
    two: the branch is ``docs/milk`` again and holds nothing the task made."""
    seeded = _branches(docs_milk="a1", main="b2")
    fork = Written("s2", ("branches", "pick/patch"), seeded,
                   _branches(docs_milk="a1", main="b2", pick_patch="c3"),
                   args=("docs/milk", "pick/patch", "b46a131ba8ba"))
    removed = _branches(docs_milk="a1", main="b2", pick_patch="d4")
    commit = Written("s3", ("branches", "pick/patch"), fork.after, removed,
                     args=("pick/patch", "CHANGELOG.md", "Remove CHANGELOG.md"))
    rewound = _branches(docs_milk="a1", main="b2", pick_patch="a1")
    why = purposeless(GIT, GIT.spec.tool("rewind_branch"), {"branch": "pick/patch",
                                                            "steps": "2"},
                      removed, rewound, [fork, commit])
    assert why == ("it leaves branches/pick/patch as it was before step s2 changed it: "
                   "equal to docs/milk, which that step started it from")


def test_moving_a_new_branch_below_where_it_started_is_work():
    seeded = _branches(docs_milk="a1", main="b2")
    fork = Written("s2", ("branches", "pick/patch"), seeded,
                   _branches(docs_milk="a1", main="b2", pick_patch="c3"),
                   args=("docs/milk", "pick/patch", "b46a131ba8ba"))
    below = _branches(docs_milk="a1", main="b2", pick_patch="e5")
    assert purposeless(GIT, GIT.spec.tool("rewind_branch"), {"branch": "pick/patch",
                                                             "steps": "2"},
                       fork.after, below, [fork]) is None
