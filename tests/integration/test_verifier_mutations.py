"""No check is dead: spoiling one checked place of a solved state makes the verifier fail.

For accepted tasks of every built-in ecosystem, a fresh sandbox is realized, the
reference solution run (reward 1), and then, for each check in turn, the state is
restored to the solved snapshot and only that check's place is overwritten with a
sentinel (the same fakes the gate's shortcut controls use; a fresh wrong answer for the
answer file; for the check that the entries a task leaves alone are unchanged, the
section's vandal commands; for the check that a shared section holds nothing nobody asked
for, the section's extra commands, each adding one such entry).  The reward must drop to 0
and that very check must be reported failing.
"""

import json

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.core.commands import render_shell, shell_script
from tasks.execute.realize import LiveEnvironment
from tasks.gate.shortcuts import shortcut
from tasks.gate.vandal import Vandalism

RUN_ID = "itest-mutations"
SENTINEL = "tf-mutated"


# places the shortcut fakes keep right on purpose: the right index is the work itself, and
# a fake table keeps the expected columns
SPOILERS = {
    "indexes": lambda key: f"sqlite3 shop.db 'DROP INDEX \"{key}\"'",
    "schema": lambda key: (f"sqlite3 shop.db 'CREATE TABLE tf_copy AS SELECT * FROM \"{key}\"' && "
                           f"{{ sqlite3 shop.db 'DROP VIEW \"{key}\"' 2>/dev/null || "
                           f"sqlite3 shop.db 'DROP TABLE \"{key}\"'; }} && sqlite3 shop.db "
                           f"'ALTER TABLE tf_copy ADD COLUMN tf_mutated; "
                           f"ALTER TABLE tf_copy RENAME TO \"{key}\"'"),
}


def _script_spoiler(script: str):
    """Runs ``script`` as a solution is run, in the workdir."""
    def spoil(sandbox):
        done = sandbox.exec(["bash", "-s"], stdin=script.encode(), timeout=60,
                            env={"TASKFACTORY_WORKDIR": sandbox.workdir})
        assert done.exit_code == 0, done.stderr
    return spoil


def _vandal_spoilers(eco, check: Check) -> list:
    """For an ``unchanged`` check: each of its section's vandal commands, on one of the
    entries the check keeps (a different one per command where there are several)."""
    keys = sorted(check.expected)
    commands = eco.spec.probe_sections[check.section].vandal
    assert commands, f"section {check.section} has no vandal command"
    return [_script_spoiler(Vandalism(check.section, key, render_shell(command, {"key": key}))
                            .script)
            for i, command in enumerate(commands) for key in [keys[i % len(keys)]]]


def _extra_spoilers(eco, check: Check) -> list:
    """For an ``only`` check: each of its section's extra commands, adding one entry
    nobody asked for."""
    commands = eco.spec.probe_sections[check.section].extra
    assert commands, f"shared section {check.section} has no extra command"
    return [_script_spoiler(shell_script("One entry nobody asked for.", [command]))
            for command in commands]


def _spoilers(eco, check: Check) -> list:
    """Ways to spoil the place ``check`` reads, each one on its own."""
    if check.kind == "unchanged":
        return _vandal_spoilers(eco, check)
    if check.kind == "only":
        return _extra_spoilers(eco, check)
    return [lambda sandbox: _spoil(eco, sandbox, check)]


def _spoil(eco, sandbox, check: Check) -> None:
    if check.compare == "absent":  # the deleted thing is back
        sandbox.write_files({check.key: SENTINEL.encode()})
        return
    fake = shortcut(eco, [check], "literals", f"`{SENTINEL}`")
    if check.section in SPOILERS:
        fake.commands = [SPOILERS[check.section](check.key)]
    if check.kind == "answer":
        fake.files = {check.key: f"{SENTINEL}\n".encode()}
    assert fake.files or fake.commands, f"no way to spoil {check}"
    if fake.files:
        sandbox.write_files(fake.files)
    if fake.commands:
        done = sandbox.exec(["bash", "-c", fake.script], timeout=60)
        assert done.exit_code == 0, done.stderr


def _failing(sandbox, verifier_py: str) -> tuple[dict, set[str]]:
    done = sandbox.exec(["python3", "-", "--root", "."], stdin=verifier_py.encode(), timeout=60)
    fails = {line.split()[2] for line in done.stderr.splitlines() if line.startswith("FAIL ")}
    return json.loads(done.stdout.strip().splitlines()[-1]), fails


@pytest.mark.docker
@pytest.mark.parametrize("name", ["files", "sql", "git", "service"])
def test_each_check_matters(name):
    from tasks.plan.planner import plan_candidates

    eco = ecosystem(name)
    # five tasks to mutate; planned from eight candidates, as a medium graph may draw a
    # lookup that finds nothing in a small history (git's latest_release_in) and be rejected
    candidates, _ = plan_candidates(eco, 8, run_seed=31)
    tasks = [o.task for o in (build_candidate(c, name, DockerConfig(), RUN_ID)
                              for c in candidates) if o.task]
    assert len(tasks) >= 5
    mutated = 0
    config = DockerConfig().for_ecosystem(eco)
    for task in tasks:
        trace = Trace.model_validate_json(task.trace_json)
        checks = [Check(**c) for c in json.loads(task.checks_json)]

        def opener(packages, config=config):
            return provider_for(config, RUN_ID).sandbox()

        with LiveEnvironment(eco, task.seed, opener, trace.environment, task.fault) as env:
            sb = env.sandbox
            done = sb.exec(["bash", "-s"], stdin=task.solution_sh.encode(),
                           env={"TASKFACTORY_WORKDIR": sb.workdir}, timeout=120)
            assert done.exit_code == 0, done.stderr
            solved = sb.snapshot()
            summary, fails = _failing(sb, task.verifier_py)
            assert summary["reward"] == 1 and not fails
            for check in checks:
                for spoil in _spoilers(eco, check):
                    sb.restore(solved)
                    spoil(sb)
                    summary, fails = _failing(sb, task.verifier_py)
                    where = f"{check.section}/{check.key}" if check.section else check.key
                    assert summary["reward"] == 0, f"{task.task_id}: spoiling {where} passes"
                    assert where in fails, (where, fails)
                    mutated += 1
    assert mutated >= len(tasks)
    close_run(RUN_ID)
