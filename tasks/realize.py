"""Realization: turn an ecosystem seed into a live environment inside a sandbox.

Writes the seed files, runs the ecosystem's ``setup`` command, starts its ``service``
and waits until it is ready, then snapshots the workspace: that snapshot is the initial
state every later phase restores.  :func:`probe` reads the ecosystem's state as JSON.
"""

from __future__ import annotations

import json
import shlex

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox, Snapshot
from tasks.failures import StageFailure

SETUP_TIMEOUT_S = 120.0


def realize(sandbox: Sandbox, eco: Ecosystem, seed: int) -> tuple[dict[str, bytes], Snapshot]:
    """Seed, set up and start the environment; returns the seed files and the snapshot."""
    files = eco.seed_state(seed)
    sandbox.write_files(files)
    spec = eco.spec
    if spec.setup:
        done = sandbox.exec(["bash", "-c", spec.setup], timeout=SETUP_TIMEOUT_S)
        if done.exit_code != 0:
            raise StageFailure("realize", "environment", f"setup failed (exit {done.exit_code}): "
                                                         f"{done.stderr.strip()[-300:]}")
    if spec.service:
        svc = spec.service
        # Start and wait in one exec: the sandbox kills what an exec leaves in its process
        # group when it returns, so the server must have left the group (setsid) by then.
        polls = max(1, int(svc.ready_timeout_s / 0.1))
        start_and_wait = (
            f"setsid nohup bash -c {shlex.quote(svc.start)} >/tmp/service.log 2>&1 </dev/null &"
            f" for _ in $(seq {polls}); do ({svc.ready}) >/dev/null 2>&1 && exit 0; "
            "sleep 0.1; done; cat /tmp/service.log >&2; exit 1")
        ready = sandbox.exec(["bash", "-c", start_and_wait], timeout=svc.ready_timeout_s + 5)
        if ready.exit_code != 0:
            raise StageFailure("realize", "environment",
                               f"service did not become ready: {ready.stderr.strip()[-300:]}")
    return files, sandbox.snapshot()


def probe(sandbox: Sandbox, eco: Ecosystem) -> dict:
    """The ecosystem's state as canonical JSON, read inside the sandbox."""
    result = sandbox.exec(["python3", "-"], stdin=eco.probe_source.encode(), timeout=30)
    if result.exit_code != 0:
        raise StageFailure("verify", "environment",
                           f"probe failed: {result.stderr.strip()[-200:]}")
    return json.loads(result.stdout)
