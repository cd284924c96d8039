"""The vandal control's changes: after the reference solution, one change to a seeded
entry the task leaves alone, in each probe section that can have one (pure; nothing runs
here).

A sound verifier fails a solution that does what was asked and also breaks something else.
In every section that has an ``unchanged`` check (entries the verifier says must stay as
they are) and declares ``vandal`` commands (delete, append to, or alter one entry; see
:class:`schemas.ecosystem.ProbeSection`), one of those entries is changed; all the changes
run together, and the verifier must fail each section's ``unchanged`` check (the control
names the sections whose check still passed).  Key and command are drawn with a generator
seeded by the checks, so the gate and ``check-harbor`` make the same changes.  A task whose
sections declare no such command has no vandal control.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ProbeSection
from schemas.verifier import Check
from tasks.core.commands import render_shell, shell_script


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

    @property
    def check(self) -> str:
        """The check that must catch it, as the verifier names it."""
        return f"{self.section}/{self.section}"

    def __str__(self) -> str:
        return f"`{self.command}` on {self.section}/{self.key}"


def vandalisms(eco: Ecosystem, checks: list[Check]) -> list[Vandalism]:
    """The changes the vandal control makes for a task with ``checks``, one per section
    (empty when no entry the task promises to keep lies in a section with ``vandal``
    commands)."""
    targets = {c.section: (sorted(c.expected), commands) for c in checks
               if c.kind == "unchanged"
               and (commands := eco.spec.probe_sections.get(c.section, ProbeSection()).vandal)}
    payload = json.dumps([c.model_dump() for c in checks], sort_keys=True)
    rng = random.Random(hashlib.sha256(payload.encode()).hexdigest())
    changes = []
    for section in sorted(targets):
        keys, commands = targets[section]
        key = rng.choice(keys)
        changes.append(Vandalism(section, key, render_shell(rng.choice(commands), {"key": key})))
    return changes


def vandal_script(changes: list[Vandalism]) -> str:
    """One ``solve.sh`` making every change (each going on past a failure of another)."""
    return shell_script("Vandal control: changes the task does not ask for.",
                        [f"{{ {c.command}; }} || true" for c in changes])
