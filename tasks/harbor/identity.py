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
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tasks.harbor.container import TaskContainer
from tasks.harbor.source import ExportTask
from tasks.realize import LiveEnvironment, probe, state_digest
from tasks.validate import first_difference

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

    state = box.exec(f"python3 -c {shlex.quote(task.eco.probe_source)}", user=user,
                     timeout=60, workdir=workdir)
    listing = box.exec(_manifest_command(), user=user, timeout=120)
    if state.exit_code != 0 or listing.exit_code != 0:
        raise StateUnreadable(f"the probe or the manifest fails in the exported image: "
                              f"{(state.output + listing.output).strip()[-300:]}")
    return json.loads(state.output), json.loads(listing.output)


def factory_state(task: ExportTask, run: str) -> tuple[dict, dict]:
    """(probe state, manifest) of a fresh factory realization of the task's environment."""
    from tasks.rebuild import fresh_environments

    with fresh_environments(task, run) as open_sandbox, LiveEnvironment(
            task.eco, task.row.seed, open_sandbox, task.trace.environment,
            task.row.fault) as env:
        listing = env.sandbox.exec(["bash", "-c", _manifest_command()], timeout=120)
        if listing.exit_code != 0:
            raise RuntimeError(f"manifest failed: {listing.stderr.strip()[-300:]}")
        return probe(env.sandbox, task.eco), json.loads(listing.stdout)


def compare(task: ExportTask, exported: tuple[dict, dict], factory: tuple[dict, dict]) -> Identity:
    """The three comparisons, the first failing one named."""
    (state, listing), (want_state, want_listing) = exported, factory
    recorded = task.row.initial_state_sha256
    if recorded is not None and state_digest(state) != recorded:
        where = first_difference(state, want_state) or "(the factory realization agrees)"
        return Identity(False, f"the probe state differs from the one the factory executed "
                               f"from (first difference with a fresh realization: {where})")
    if state != want_state:
        return Identity(False, f"the probe state differs from a fresh factory realization at "
                               f"{first_difference(state, want_state)}")
    for path in sorted(set(listing) | set(want_listing)):
        if listing.get(path) != want_listing.get(path):
            return Identity(False, f"{path}: {listing.get(path)} in the image, "
                                   f"{want_listing.get(path)} in the factory")
    note = "" if recorded is not None else " (no recorded initial state on this row)"
    return Identity(True, f"{len(listing)} paths identical, probe state identical{note}")
