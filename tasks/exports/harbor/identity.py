"""Is an exported task's image the environment the factory validated?  Three comparisons.

1. The probe state of a fresh container of the exported image must hash to the task's
   ``initial_state_sha256`` — the state the factory's execution started from (rows made
   before that column existed skip this one, and say so).  For git, the state names
   every seeded commit by its hash, so the seeded history must be the same commits.
2. The same probe state must equal the one a fresh factory realization of the task's seed
   (docker backend, the ecosystem's image, the trace's additions) gives today.
3. A manifest of ``/workspace`` and ``/opt/taskfactory`` — every path with its type,
   permission bits, owner, group and the sha256 of its bytes — must be identical in the
   two.  Two files are listed without their bytes because they record when and where
   they were written, not what the repository holds: a git index (it caches inode numbers
   and modification times) and reflogs (``.git/logs/``, which hold commit times).

A reconstruct task's image holds the agent's workspace, its public examples, not a seed
realization; it is compared with the examples the factory lays out afresh
(:func:`tasks.exports.harbor.rebuild.rebuilt_cases`,
:func:`tasks.reconstruct.examples.write_examples`): the
manifest path by path, except inside each example's expected workspace, which the
reference program wrote (a commit it makes has the hash of its date), where the probe
state of that workspace must be the same instead (2 stands in for 1: the examples are
not the state the trace started from).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from environments.docker.harbor_container import TaskContainer
from tasks.execute.realize import LiveEnvironment, first_difference, probe, state_digest
from tasks.exports.harbor.source import ExportTask
from tasks.plan.tiers import scale_of
from tasks.reconstruct.program import EXAMPLES

MANIFEST_ROOTS = ("/workspace", "/opt/taskfactory")
MANIFEST_PY = r'''
import hashlib, json, os, stat, sys

def volatile(rel):
    parts = rel.split("/")
    return any(parts[i] == ".git" and (parts[i + 1:] == ["index"] or parts[i + 1:i + 2] == ["logs"])
               for i in range(len(parts) - 1))

out = {}
for root in sys.argv[1:]:
    if not os.path.isdir(root):
        continue
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for path in [folder] + [os.path.join(folder, n) for n in sorted(names)]:
            st = os.lstat(path)
            entry = [stat.filemode(st.st_mode), st.st_uid, st.st_gid]
            if stat.S_ISLNK(st.st_mode):
                entry.append(os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                if volatile(os.path.relpath(path, root)):
                    entry.append("(volatile)")
                else:
                    with open(path, "rb") as f:
                        entry.append(hashlib.sha256(f.read()).hexdigest())
            out[path] = entry
print(json.dumps(out, sort_keys=True))
'''


EXAMPLES_PROBE_PY = r'''
import glob, json, os, subprocess, sys

out = {}
for folder in sorted(glob.glob(os.path.join(sys.argv[2], "*", "expected"))):
    done = subprocess.run([sys.executable, "-c", sys.argv[1]], cwd=folder, check=True,
                          capture_output=True)
    out[folder] = json.loads(done.stdout)
print(json.dumps(out, sort_keys=True))
'''
"""The probe in every ``examples/<case>/expected`` folder (argv: the probe, the folder)."""


class StateUnreadable(RuntimeError):
    """The probe or the manifest script failed in the exported image."""


@dataclass(frozen=True)
class Identity:
    identical: bool
    detail: str


def _manifest_command() -> str:
    import shlex

    return f"python3 -c {shlex.quote(MANIFEST_PY)} " + " ".join(MANIFEST_ROOTS)


def exported_state(box: TaskContainer, task: ExportTask, user: str,
                   workdir: str) -> tuple[dict, dict]:
    """(probe state, manifest) of a fresh container of the exported image."""
    import shlex

    read = examples_probe_command(task) if task.reconstruct else \
        f"python3 -c {shlex.quote(task.eco.probe_source)}"
    state = box.exec(read, user=user, timeout=120, workdir=workdir)
    listing = box.exec(_manifest_command(), user=user, timeout=120)
    if state.exit_code != 0 or listing.exit_code != 0:
        raise StateUnreadable(f"the probe or the manifest fails in the exported image: "
                              f"{(state.output + listing.output).strip()[-300:]}")
    return json.loads(state.output), json.loads(listing.output)


def factory_state(task: ExportTask, run: str) -> tuple[dict, dict]:
    """(probe state, manifest) of a fresh factory realization of the task's environment."""
    from tasks.exports.harbor.rebuild import fresh_environments

    if task.reconstruct:
        return _examples_state(task, run)
    with fresh_environments(task, run) as open_sandbox, LiveEnvironment(
            task.eco, task.row.seed, open_sandbox, task.trace.environment,
            task.row.fault, scale_of(task.row.tier)) as env:
        listing = env.sandbox.exec(["bash", "-c", _manifest_command()], timeout=120)
        if listing.exit_code != 0:
            raise RuntimeError(f"manifest failed: {listing.stderr.strip()[-300:]}")
        return probe(env.sandbox, task.eco), json.loads(listing.stdout)


def examples_probe_command(task: ExportTask) -> str:
    """Prints the probe state of each public example's expected workspace (run in the
    agent's workspace), as JSON by folder."""
    import shlex

    return (f"python3 -c {shlex.quote(EXAMPLES_PROBE_PY)} {shlex.quote(task.eco.probe_source)}"
            f" {EXAMPLES}")


def _byte_compared(path: str) -> bool:
    """Is a manifest path compared by its bytes on a reconstruct task (every path but what
    is inside an example's expected workspace, which its probe state stands for)?"""
    parts = path.split("/")
    return not (len(parts) > 5 and parts[2] == EXAMPLES and parts[4] == "expected")


def _examples_state(task: ExportTask, run: str) -> tuple[dict, dict]:
    """({}, manifest) of a reconstruct task's agent workspace as the gate lays it out: its
    public cases run afresh, their examples written into an emptied workspace."""
    from tasks.exports.harbor.rebuild import fresh_environments, rebuilt_cases
    from tasks.reconstruct.examples import write_examples

    with fresh_environments(task, run) as open_sandbox, open_sandbox(()) as sandbox:
        write_examples(sandbox, rebuilt_cases(task, sandbox))
        state = sandbox.exec(["bash", "-c", examples_probe_command(task)], timeout=120)
        listing = sandbox.exec(["bash", "-c", _manifest_command()], timeout=120)
        if state.exit_code != 0 or listing.exit_code != 0:
            raise RuntimeError(f"probe or manifest failed: "
                               f"{(state.stderr + listing.stderr).strip()[-300:]}")
        return json.loads(state.stdout), json.loads(listing.stdout)


def compare(task: ExportTask, exported: tuple[dict, dict], factory: tuple[dict, dict]) -> Identity:
    """The three comparisons, the first failing one named."""
    (state, listing), (want_state, want_listing) = exported, factory
    recorded = None if task.reconstruct else task.row.initial_state_sha256
    if recorded is not None and state_digest(state) != recorded:
        where = first_difference(state, want_state) or "(the factory realization agrees)"
        return Identity(False, f"the probe state differs from the one the factory executed "
                               f"from (first difference with a fresh realization: {where})")
    if state != want_state:
        return Identity(False, f"the probe state differs from a fresh factory realization at "
                               f"{first_difference(state, want_state)}")
    for path in sorted(set(listing) | set(want_listing)):
        if task.reconstruct and not _byte_compared(path):
            continue
        if listing.get(path) != want_listing.get(path):
            return Identity(False, f"{path}: {listing.get(path)} in the image, "
                                   f"{want_listing.get(path)} in the factory")
    if task.reconstruct:
        return Identity(True, f"{sum(map(_byte_compared, listing))} paths identical, probe "
                              f"state of {len(state)} expected examples identical")
    note = "" if recorded is not None else " (no recorded initial state on this row)"
    return Identity(True, f"{len(listing)} paths identical, probe state identical{note}")
