"""The built-in probes trust nothing the agent wrote (docs/ecosystem-reference.md, "What a
probe may trust"), in real containers.

For each built-in: a seeded workspace after a reference-like change, then one hostile
fixture planted as the sandbox user (the cases are in ``tests/support/hostile_plants.py``),
then the probe, run as the factory runs it (``python3 -``, sandbox user) and as the
verifier does (exec'd in-process, as root with Docker's default capabilities).  Each run
must (a) run no planted program: the canary file it would create does not exist; (b)
finish within its timeout; (c) report the true state: the entries the plant cannot change
are what they were before it, and what it planted is recorded as what it is (a symlink as
a link, a FIFO as a FIFO), or the probe fails naming the problem; and it must never write
into the workspace, nor leave its private folder behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator

import pytest

from environments.ecosystems import Ecosystem, load_ecosystem
from environments.registry import make_provider
from environments.sandbox import Sandbox, SandboxProvider, Snapshot
from tasks.execute.realize import realize
from tests.support.hostile_plants import CANARY, CHANGES, HOSTILE, PRELUDE, Hostile
from tests.support.probe_runs import exec_as_root, run_probe_source, verifier_like

pytestmark = pytest.mark.docker

RUN_ID = f"itest-probe-trust-{os.getpid()}"  # unique: other checkouts may share the engine
SEED = 3
PROBE_TIMEOUT_S = 20.0
LISTING = ("find . -printf '%p %y %s %m %T@ %l\\n' | LC_ALL=C sort; "
           "find . -type f -readable -exec sha256sum {} + | LC_ALL=C sort")
"""Every path of the workspace with its type, size, mode, mtime and link target, and the
digest of every regular file the sandbox user can read: what a write would change."""


Opened = tuple[Ecosystem, Sandbox, Snapshot]


@pytest.fixture(scope="module")
def workspaces() -> Iterator[Callable[[str], Opened]]:
    """``get(name)``: one sandbox per ecosystem, opened on first use, with the snapshot of
    its seed after the reference-like change."""
    opened: dict[str, Opened] = {}
    providers: list[SandboxProvider] = []

    def get(name: str) -> Opened:
        if name not in opened:
            eco = load_ecosystem(name)
            providers.append(make_provider(verifier_like(eco), RUN_ID))
            sandbox = providers[-1].open(labels={"test": "probe-trust"})
            realize(sandbox, eco, SEED)
            _sh(sandbox, CHANGES[name])
            opened[name] = (eco, sandbox, sandbox.snapshot())
        return opened[name]

    try:
        yield get
    finally:
        for provider in providers:
            provider.close()


def _sh(sandbox: Sandbox, command: str) -> str:
    done = sandbox.exec(["bash", "-c", f"set -euo pipefail\n{PRELUDE}\n{command}"],
                        timeout=60)
    assert done.exit_code == 0, f"{command!r} failed: {done.stderr[-500:]}"
    return done.stdout


def _state(sandbox: Sandbox, eco: Ecosystem) -> dict:
    done = run_probe_source(sandbox, eco.probe_source)
    assert done.exit_code == 0, done.stderr[-500:]
    return dict(json.loads(done.stdout))


CASES = [pytest.param(name, hostile, as_root,
                      id=f"{name}-{hostile.name}-{'root' if as_root else 'user'}")
         for name, cases in HOSTILE.items() for hostile in cases for as_root in (False, True)]


@pytest.mark.parametrize("name,hostile,as_root", CASES)
def test_probe_runs_nothing_planted_and_reports_the_true_state(
        workspaces: Callable[[str], Opened], name: str, hostile: Hostile,
        as_root: bool) -> None:
    eco, sandbox, changed = workspaces(name)
    sandbox.restore(changed)
    assert exec_as_root(sandbox, ["bash", "-c", f"rm -f {CANARY}-*"]).exit_code == 0
    if hostile.setup:
        _sh(sandbox, hostile.setup)
    before = _state(sandbox, eco)
    _sh(sandbox, hostile.plant)
    listing = _sh(sandbox, LISTING)
    result = run_probe_source(sandbox, eco.probe_source, as_root, timeout=PROBE_TIMEOUT_S)
    assert not result.timed_out and result.exit_code not in (124, 137), \
        f"(b) the probe did not finish within {PROBE_TIMEOUT_S:.0f} s"
    ran = _sh(sandbox, f"ls {CANARY}-* 2>/dev/null || true")
    assert ran == "", f"(a) a planted program ran: {ran.split()}"
    assert _sh(sandbox, LISTING) == listing, "the probe changed the workspace"
    left = exec_as_root(sandbox, ["bash", "-c", "ls -d /tmp/probe-* 2>/dev/null || true"])
    assert left.stdout == "", f"the probe left its private folder: {left.stdout}"
    if isinstance(hostile.expect, str):
        assert result.exit_code != 0, f"(c) the probe read a state: {result.stdout[:300]}"
        assert hostile.expect in result.stderr, result.stderr[-500:]
        return
    assert result.exit_code == 0, result.stderr[-500:]
    got, want = json.loads(result.stdout), hostile.expect(before, as_root)
    for section, entries in want.items():
        assert got.get(section) == entries, f"(c) {section} is not the true state"


def test_editing_the_seeded_list_only_makes_ids_differ(
        workspaces: Callable[[str], Opened]) -> None:
    """A commit listed as seeded is named by its own hash (which names that very commit,
    never the ``new:`` id a task expects of a commit it makes); a seeded commit left out of
    the list is named ``new:...`` (never its hash), and so are its descendants, whose ids
    digest their parents' ids."""
    eco, sandbox, changed = workspaces("git")
    sandbox.restore(changed)
    before = _state(sandbox, eco)
    fix, main = _sh(sandbox, "git rev-parse work/fix main").split()
    _sh(sandbox, f"echo {fix} >> .git/info/taskfactory-seeded")
    listed = _state(sandbox, eco)
    assert before["branches"]["work/fix"].startswith("new:")
    assert listed["branches"]["work/fix"] == fix
    sandbox.restore(changed)
    _sh(sandbox, f"grep -vx {main} .git/info/taskfactory-seeded > /tmp/seeded "
                 "&& cat /tmp/seeded > .git/info/taskfactory-seeded")
    unlisted = _state(sandbox, eco)
    assert before["branches"]["main"] == main
    assert unlisted["branches"]["main"].startswith("new:")
    assert unlisted["branches"]["work/fix"] not in (before["branches"]["work/fix"], fix)


def test_the_sandbox_user_cannot_hard_link_what_it_may_not_write() -> None:
    """The premise of reading hard links as files (``fs.protected_hardlinks``): in a
    workspace on the container's own filesystem, as a Harbor task has it, the agent cannot
    link a file it neither owns nor may write, so a link shows it nothing new."""
    eco = load_ecosystem("files")
    provider = make_provider(verifier_like(eco).model_copy(update={"workdir_mb": 0}), RUN_ID)
    try:
        sandbox = provider.open(labels={"test": "probe-trust"})
        linked = sandbox.exec(["ln", "/etc/shadow", "shadow"])  # same filesystem: no EXDEV
        assert linked.exit_code != 0 and "Operation not permitted" in linked.stderr, linked
    finally:
        provider.close()
