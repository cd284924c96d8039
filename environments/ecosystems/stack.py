"""Stacks: several ecosystems in one workspace, planned and verified as one.

``files+sql+git`` (members joined by ``+``, each a built-in name or a folder) is an
:class:`~environments.ecosystems.Ecosystem` like any other: its tools, samplers, state
types, discoveries, describers, fault injectors and scenarios are its members' side by
side, so the typed planner connects a query's CSV export to a file tool, or a file to a
commit, wherever the types meet.  In the sandbox:

- **seed**: the members' seed files in one workspace (two members may not seed one path);
- **setup**: each member's setup in turn, each seeing the seed's ``.seed/`` folder as it
  would alone (a setup may remove it);
- **service**: at most one member runs one;
- **discoveries**: one of each name, the first member's;
- **probe**: one script that runs each member's probe in a namespace of its own and joins
  their sections.  A section two members report (``files``) is the first member's, and a
  member's ``owns`` paths (its repository, its database) are left out of every other
  member's sections: they are state its own sections report.

Members are ordered by name, so ``sql+files`` and ``files+sql`` are one stack.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from schemas.ecosystem import EcosystemSpec, StackSpec

if TYPE_CHECKING:
    from environments.ecosystems import Ecosystem
    from environments.ecosystems.contract import Layout

JOIN = "+"
STASH = ".stack-seed"
"""Where a stack's setup keeps the seed's ``.seed/`` folder between its members' setups."""


class StackError(ValueError):
    """Members that cannot share one workspace (one message naming the clash and the fix)."""


def is_stack(ref: str) -> bool:
    return JOIN in ref


def member_refs(ref: str) -> list[str]:
    parts = [p.strip() for p in ref.split(JOIN)]
    if len(parts) < 2 or not all(parts):
        raise StackError(f"stack {ref!r}: name two or more ecosystems joined by '+', like "
                         "files+sql")
    return parts


def compose(members: Sequence[Ecosystem], extras: StackSpec | None = None) -> Ecosystem:
    """One ecosystem of ``members`` (two or more, distinct names) in one workspace, with
    a stack file's tools, scenarios and context (``extras``)."""
    ordered = sorted(members, key=lambda m: m.name)
    names = [m.name for m in ordered]
    if len(set(names)) != len(names) or len(names) < 2:
        raise StackError(f"stack {JOIN.join(names)!r}: name two or more different ecosystems")
    spec = _spec(ordered, extras or StackSpec(members=names))
    digest = hashlib.sha256("\0".join(f"{m.name}:{m.digest}" for m in ordered).encode())
    if extras is not None:
        digest.update(b"\0" + extras.model_dump_json().encode())
    return replace(  # every field anew: a member's class, not a member's values
        ordered[0], spec=spec, folder=ordered[0].folder, seed_fn=_seed(ordered),
        samplers=_samplers(ordered), probe_source=_probe(ordered),
        digest=digest.hexdigest()[:16],
        layout_fn=_layout(ordered),
        provide_fn=_provide(ordered), shortcut_hooks=_shortcuts(ordered),
        plants={_plant_name(m, p): f for m in ordered for p, f in m.plants.items()},
        members=tuple(ordered), scales=all(m.scales for m in ordered))


def _spec(members: list[Ecosystem], extras: StackSpec) -> EcosystemSpec:
    specs = [m.spec for m in members]
    name = JOIN.join(s.name for s in specs)
    answers = {s.answer_file for s in specs}
    if len(answers) > 1:
        raise StackError(f"stack {name!r}: its members name different answer files "
                         f"{sorted(answers)}; give them one answer_file")
    services = [s.name for s in specs if s.service]
    if len(services) > 1:
        raise StackError(f"stack {name!r}: {' and '.join(services)} each run a service; a "
                         "stack runs at most one")
    backends = [b for b in specs[0].backends if all(b in s.backends for s in specs)]
    faults = _faults(members, extras)
    repairs = {n for inj in faults["injectors"] for n in inj.repair} if faults else set()
    raw: dict[str, Any] = {
        "name": name,
        "description": extras.description or " ".join(s.description.strip() for s in specs),
        "context": extras.context if extras.context is not None else
        "\n".join(s.context.strip() for s in specs if s.context.strip()),
        "shared_note": " ".join(s.shared_note.strip() for s in specs if s.shared_note.strip()),
        "seed": {"module": "seed.py"}, "probe": "probe.py",
        "probe_sections": _sections(specs),
        "setup": _setup([s.setup for s in specs if s.setup]),
        "service": next((s.service for s in specs if s.service), None),
        "backends": backends,
        "image": {"packages": sorted({p for s in specs for p in s.image.packages}),
                  "provides": {k: v for s in specs for k, v in s.image.provides.items()}},
        "answer_file": specs[0].answer_file,
        "owns": [g for s in specs for g in s.owns],
        "state_types": [t for s in specs for t in s.state_types],
        "tools": [t for s in specs for t in s.tools if not t.repair or t.name in repairs]
        + extras.tools,
        "discovery": _once([d for s in specs for d in s.discovery]),
        "describers": [d for s in specs for d in s.describers],
        "faults": faults,
        "scenarios": extras.scenarios or [sc for s in specs for sc in s.scenarios],
    }
    if not backends:
        raise StackError(f"stack {name!r}: its members share no sandbox backend")
    try:
        return EcosystemSpec.model_validate(
            {k: v.model_dump() if hasattr(v, "model_dump") else v for k, v in raw.items()})
    except ValidationError as exc:
        raise StackError(f"stack {name!r}: its members clash: "
                         f"{exc.errors()[0]['msg']}") from None


def _sections(specs: list[EcosystemSpec]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in specs:
        for key, section in s.probe_sections.items():
            out.setdefault(key, section)
    return out


def _once(items: list[Any]) -> list[Any]:
    """Discoveries by name, the first member's of each: two members may each list the
    workspace's files (one with ``ls``, one with ``find``); one listing is enough."""
    seen: dict[str, Any] = {}
    for item in items:
        seen.setdefault(item.name, item)
    return list(seen.values())


def _plant_name(member: Ecosystem, plant: str) -> str:
    return f"{member.name.replace('-', '_')}__{plant}"


def _faults(members: list[Ecosystem], extras: StackSpec) -> dict[str, Any] | None:
    """The members' fault injectors; with scenarios of the stack's own, those its scenarios
    list (a stack's tasks are the jobs that cross its members: a fault of one member alone
    is that member's fix task, made where it stands alone)."""
    listed = {f for sc in extras.scenarios for f in sc.faults}
    injectors = [inj.model_copy(update={"plant": _plant_name(m, inj.plant)})
                 for m in members if m.spec.faults for inj in m.spec.faults.injectors
                 if not extras.scenarios or inj.name in listed]
    return {"module": "faults.py", "injectors": injectors} if injectors else None


def _setup(commands: list[str]) -> str | None:
    """One shell command running each member's setup in turn, each with the seed's
    ``.seed/`` folder as it was laid out (one member's setup may delete it)."""
    if len(commands) < 2:
        return commands[0] if commands else None
    steps = [f"rm -rf .seed && cp -a {STASH} .seed && ( {c} )" for c in commands]
    return " && ".join([f"mv .seed {STASH}", *steps, f"rm -rf .seed {STASH}"])


def _seed(members: list[Ecosystem]) -> Callable[..., dict[str, bytes]]:
    def generate(seed: int, scale: int = 1) -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        owner: dict[str, str] = {}
        for m in members:
            for path, data in m.seed_state(seed, scale=scale).items():
                if path in files:
                    raise StackError(f"stack {JOIN.join(x.name for x in members)!r}: "
                                     f"{owner[path]} and {m.name} both seed {path!r} "
                                     f"(seed {seed}); move one of them")
                files[path], owner[path] = data, m.name
        return files
    return generate


def _layout(members: list[Ecosystem]) -> Layout:
    def layout(seed: int, /, **scale: int) -> list[str]:
        return sorted({p for m in members for p in m.state_paths(seed, scale.get("scale", 1))})
    return layout


def _samplers(members: list[Ecosystem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in members:
        for facet, fn in m.samplers.items():
            if facet in out:
                raise StackError(f"stack {JOIN.join(x.name for x in members)!r}: two members "
                                 f"define a sampler named {facet!r}; rename one")
            out[facet] = fn
    return out


def _provide(members: list[Ecosystem]) -> Callable[[str, int], bytes | None]:
    def provide(path: str, seed: int) -> bytes | None:
        return next((got for m in members if (got := m.provide(path, seed)) is not None),
                    None)
    return provide


def _shortcuts(members: list[Ecosystem]) -> SimpleNamespace | None:
    """The members' shortcut hooks, each called with the sections of its own member
    (``expected`` is ``{section: value}``)."""
    hooked = [m for m in members if m.shortcut_hooks is not None]
    if not hooked:
        return None
    owner = {key: m for m in reversed(members) for key in m.spec.probe_sections}

    def mine(m: Ecosystem, expected: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in expected.items() if owner.get(k) is m}

    def command(hook: str, key: str, expected: dict[str, Any], *more: Any) -> str | None:
        got = [getattr(m.shortcut_hooks, hook)(key, part, *more) for m in hooked
               if (part := mine(m, expected))]
        return "\n".join(c for c in got if c) or None

    def near_misses(key: str, expected: dict[str, Any]) -> list[Any]:
        return [miss for m in hooked if hasattr(m.shortcut_hooks, "near_misses")
                and (part := mine(m, expected))
                for miss in m.shortcut_hooks.near_misses(key, part)]  # type: ignore[union-attr]

    return SimpleNamespace(empty=lambda key, expected: command("empty", key, expected),
                           fill=lambda key, expected, lits: command("fill", key, expected, lits),
                           near_misses=near_misses)


PROBE = '''"""A stack's probe: each member's probe in a namespace of its own, their sections
joined (a section two report is the first's; a member's owned paths are left out of the
other members' sections)."""
import contextlib, fnmatch, io, json
MEMBERS = {members}
state = {{}}
for name, source, owns_elsewhere in MEMBERS:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<probe of " + name + ">", "exec"), {{"__name__": "__main__"}})
    for section, entries in json.loads(out.getvalue()).items():
        if section in state:
            continue
        if isinstance(entries, dict) and owns_elsewhere:
            entries = {{k: v for k, v in entries.items()
                        if not any(fnmatch.fnmatchcase(k, g) for g in owns_elsewhere)}}
        state[section] = entries
print(json.dumps(state, sort_keys=True, separators=(",", ":")))
'''


def _probe(members: list[Ecosystem]) -> str:
    parts = [(m.name, m.probe_source, [g for o in members if o is not m for g in o.spec.owns])
             for m in members]
    return PROBE.format(members=repr(parts))
