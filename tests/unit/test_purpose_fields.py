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
