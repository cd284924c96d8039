"""The vandal control's change: after the reference solution, one change to a seeded entry
the task leaves alone (pure; nothing runs here).

A sound verifier fails a solution that does what was asked and also breaks something else.
The entry is a key of one of the task's ``unchanged`` checks (an entry the verifier says
must stay as it is) in a probe section that declares ``vandal`` commands (delete, append
to, or alter one entry; see :class:`schemas.ecosystem.ProbeSection`).  Section, key and
command are drawn with a generator seeded by the checks, so the gate and ``check-harbor``
make the same change.  A task whose sections declare no such command has no vandal control.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ProbeSection
from schemas.verifier import Check
from tasks.commands import render_shell, shell_script


@dataclass(frozen=True)
class Vandalism:
    """One change to entry ``key`` of probe section ``section``: the rendered command."""

    section: str
    key: str
    command: str

    @property
    def script(self) -> str:
        return shell_script("Vandal control: one change the task does not ask for.",
                            [self.command])

    def __str__(self) -> str:
        return f"`{self.command}` on {self.section}/{self.key}"


def vandalism(eco: Ecosystem, checks: list[Check]) -> Vandalism | None:
    """The change the vandal control makes for a task with ``checks``, or None when no
    entry the task promises to keep lies in a section with ``vandal`` commands."""
    targets = {c.section: (sorted(c.expected), commands) for c in checks
               if c.kind == "unchanged"
               and (commands := eco.spec.probe_sections.get(c.section, ProbeSection()).vandal)}
    if not targets:
        return None
    payload = json.dumps([c.model_dump() for c in checks], sort_keys=True)
    rng = random.Random(hashlib.sha256(payload.encode()).hexdigest())
    section = rng.choice(sorted(targets))
    keys, commands = targets[section]
    key = rng.choice(keys)
    return Vandalism(section, key, render_shell(rng.choice(commands), {"key": key}))
