"""Load ecosystems — built-in by name, or a user's folder by path.

An :class:`Ecosystem` bundles the validated spec with the code it names: the seed
generator, the samplers and the probe script's source.  Errors raise
:class:`EcosystemError` with a one-line message naming the file and the field.  A user's
folder runs its Python code in worker processes, each call under a timeout
(:mod:`environments.ecosystems.code`); a failing or hanging call raises
:class:`~environments.ecosystems.usercode.UserCodeError`.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import yaml
from pydantic import ValidationError

from environments.ecosystems import contract, stack
from environments.ecosystems.code import load_functions, placement
from environments.ecosystems.files import FolderFileError, own_file, own_text
from environments.ecosystems.usercode import UserCodeError
from schemas.ecosystem import EcosystemSpec, StackSpec, type_satisfies
from schemas.yaml_text import load_yaml

BUILTIN_DIR = Path(__file__).parent
SPEC_FILE = "ecosystem.yaml"

Sampler = contract.Sampler


class EcosystemError(ValueError):
    """An ecosystem cannot be found or its spec is invalid."""


SEED_CACHE = 64
"""Seed states kept per process: planning, realizing and the cases stage ask for the same
seeds again (a seed module takes ~0.1 s per seed; 64 states are a few MB)."""
_seeds: OrderedDict[tuple[object, str, int, int], dict[str, bytes]] = OrderedDict()
_seeds_lock = threading.Lock()


def _seeded(eco: Ecosystem, seed: int, scale: int = 1) -> dict[str, bytes]:
    """``eco.seed_fn(seed)`` (with ``scale`` when it is not 1), from the process's cache of
    recent seed states (keyed by the seed function, the folder's digest, the seed and the
    scale, so a changed folder is generated afresh); a copy, so callers may change it."""
    key = (eco.seed_fn, eco.digest, seed, scale)
    with _seeds_lock:
        files = _seeds.get(key)
        if files is not None:
            _seeds.move_to_end(key)
            return dict(files)
    eco.check_scale(scale)
    files = eco.seed_fn(seed) if scale == 1 else eco.seed_fn(seed, scale=scale)
    with _seeds_lock:
        _seeds[key] = files
        while len(_seeds) > SEED_CACHE:
            _seeds.popitem(last=False)
    return dict(files)


@dataclass(frozen=True)
class Ecosystem:
    spec: EcosystemSpec
    folder: Path
    seed_fn: contract.Generate
    samplers: dict[str, Sampler]
    probe_source: str
    digest: str = field(default="")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def builtin(self) -> bool:
        """One of the project's own ecosystems, or a stack of them (a user's folder is not)."""
        return all(eco.folder.parent == BUILTIN_DIR for eco in self.parts)

    layout_fn: contract.Layout | None = None
    provide_fn: contract.Provide | None = None
    shortcut_hooks: contract.ShortcutModule | None = None
    """The spec's ``shortcuts`` module (``empty`` and ``fill``), when it names one."""
    plants: dict[str, contract.Plant] = field(default_factory=dict)
    """The faults module's functions, by name (the injectors' ``plant``)."""
    members: tuple[Ecosystem, ...] = ()
    """A stack's ecosystems (:mod:`environments.ecosystems.stack`); empty for one alone."""
    scales: bool = False
    """The seed function (and ``layout``, where the module has one) takes ``scale``
    (``generate(seed, scale=1)``): the entries multiplied, for the hard tier's larger
    states (a stack: every member's does)."""

    def crosses(self, tools: Iterable[str]) -> bool:
        """``tools`` use two or more of a stack's members (a tool of the stack's own, which
        works across them, counts as crossing by itself); False outside a stack."""
        owners = {m.name: m for m in self.members}
        used = {self._owner(t, owners) for t in tools}
        return self.name in used or len(used - {None}) >= 2

    def _owner(self, tool: str, owners: dict[str, Ecosystem]) -> str | None:
        for name, member in owners.items():
            if any(t.name == tool for t in member.spec.tools):
                return name
        return self.name if owners and any(t.name == tool for t in self.spec.tools) else None

    @property
    def parts(self) -> tuple[Ecosystem, ...]:
        """The ecosystems this one is made of: a stack's members, else itself."""
        return self.members or (self,)

    def support_files(self) -> dict[str, bytes]:
        """The image's support files by their place under ``/opt/taskfactory/``
        (``<ecosystem>/<file>``: a stack keeps each member's where it would be alone)."""
        return {f"{eco.name}/{name}": (eco.folder / name).read_bytes()
                for eco in self.parts for name in eco.spec.image.support}

    def provide(self, path: str, seed: int) -> bytes | None:
        """Content for a workspace file a tool expected but the seed did not lay out, from
        the seed module's optional ``provide(path, seed)``; None when it has none."""
        return self.provide_fn(path, seed) if self.provide_fn is not None else None

    def check_scale(self, scale: int) -> None:
        """EcosystemError, one line naming the fix, when ``scale`` is not 1 and the seed
        function takes none."""
        if scale == 1 or self.scales:
            return
        unscaled = next(m for m in self.parts if not m.scales)
        raise EcosystemError(
            f"{unscaled.folder / unscaled.spec.seed.module}: {unscaled.spec.seed.function}"
            f"(seed) (or layout) takes no 'scale', so ecosystem {unscaled.name!r} cannot seed "
            "the larger states of --difficulty hard; give both a 'scale: int = 1' parameter "
            "(docs/ecosystem-reference.md, the seed module) or use another difficulty")

    def seed_state(self, seed: int, fault: str | None = None, scale: int = 1
                   ) -> dict[str, bytes]:
        """The seed files at ``scale`` (EcosystemError when the seed function takes none
        and ``scale`` is not 1); with ``fault``, after that injector planted its defect
        (raises LookupError when the seed has no place for it)."""
        files = _seeded(self, seed, scale)
        if fault is None:
            return files
        return self.plants[self.spec.fault(fault).plant](files, seed)

    def state_paths(self, seed: int, scale: int = 1) -> list[str]:
        """The seeded file paths at ``scale``, cheaply when the seed module defines
        ``layout(seed)`` (``layout(seed, scale=...)`` where it scales)."""
        self.check_scale(scale)
        if self.layout_fn is not None:
            return self.layout_fn(seed) if scale == 1 else self.layout_fn(seed, scale=scale)
        return sorted(_seeded(self, seed, scale))

    def state_type(self, path: str) -> str | None:
        """The semantic type of a seeded file, from the spec's ``state_types`` globs."""
        for st in self.spec.state_types:
            if fnmatch(path, st.glob):
                return st.type
        return None

    def sample(self, facet: str, content: bytes | dict[str, Any], rng: random.Random,
               **context: str) -> str:
        if facet not in self.samplers:
            raise EcosystemError(f"{self.folder / SPEC_FILE}: no sampler named {facet!r}")
        return self.samplers[facet](content, rng, **context)


def _probe_parts(folder: Path, probe: str | list[str]) -> list[tuple[Path, str]]:
    """The (folder, file) pairs a probe is joined from, in order (see
    ``EcosystemSpec.probe``); a part that names no file names one that does not exist."""
    parts: list[tuple[Path, str]] = []
    for ref in [probe] if isinstance(probe, str) else probe:
        if not ref.startswith("@"):
            parts.append((folder, ref))
            continue
        name, _, file = ref[1:].partition("/")
        if name not in builtin_names():
            parts.append((folder, "no-such-probe"))
        elif file:
            parts.append((BUILTIN_DIR / name, file))
        else:
            own = load_yaml(own_text(BUILTIN_DIR / name, SPEC_FILE)).get("probe", [])
            parts += [(BUILTIN_DIR / name, p) for p in ([own] if isinstance(own, str) else own)]
    return parts


def _probe_source(folder: Path, spec: EcosystemSpec, spec_file: Path) -> str:
    try:
        return "\n".join(own_text(where, file) for where, file in _probe_parts(folder, spec.probe))
    except FolderFileError as exc:
        raise EcosystemError(f"{spec_file}: field 'probe': {spec.probe!r} names no probe "
                             f"script ({exc}; a .py file in the folder, @ plus a built-in "
                             "ecosystem, or @<built-in>/<file>.py)") from None


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in BUILTIN_DIR.glob(f"*/{SPEC_FILE}"))


def _check_file(folder: Path, name: str, spec_file: Path, what: str) -> None:
    try:
        own_file(folder, name)
    except FolderFileError as exc:
        raise EcosystemError(f"{spec_file}: field '{what}': {exc}") from None


def _check_bindable(spec: EcosystemSpec, spec_file: Path) -> None:
    """Every typed parameter has something that can bind it (a state type or a tool's
    return type that satisfies its type), and some tool can start from the state alone;
    else EcosystemError naming the parameter (planning would fail on every run)."""
    state = [st.type for st in spec.state_types]
    produced = state + [t.returns.type for t in spec.tools]
    for i, tool in enumerate(spec.tools):
        for j, p in enumerate(tool.params):
            if p.typed and not any(type_satisfies(t, p.type) for t in produced):
                raise EcosystemError(
                    f"{spec_file}: field 'tools.{i} ({tool.name}).params.{j} ({p.name}).type': "
                    f"nothing binds type {p.type!r} (no state type or tool return satisfies "
                    "it); use a type that one does, or give the parameter a sample or fresh")
    if spec.tools and not any(all(any(type_satisfies(t, p.type) for t in state)
                                  for p in tool.params if p.typed) for tool in spec.tools):
        raise EcosystemError(f"{spec_file}: field 'state_types': no tool can start from the "
                             "seeded state (every tool needs a typed input that no state type "
                             "satisfies)")


def _format_error(spec_file: Path, err: ValidationError, raw: dict[str, Any]) -> str:
    first = err.errors()[0]
    loc_parts = []
    node: object = raw
    for part in first["loc"]:
        if isinstance(part, int) and isinstance(node, list) and part < len(node):
            item = node[part]
            name = item.get("name") if isinstance(item, dict) else None
            loc_parts.append(f"{part}" + (f" ({name})" if name else ""))
            node = item
        else:
            loc_parts.append(str(part))
            node = node.get(part) if isinstance(node, dict) else None
    loc = ".".join(loc_parts)
    return f"{spec_file}: field '{loc}': {first['msg']}"


def _modules(folder: Path, spec: EcosystemSpec, spec_file: Path) -> dict[str, str]:
    """Role -> file of the Python modules the spec names, each checked to exist."""
    modules = {"seed": spec.seed.module}
    if spec.samplers:
        modules["samplers"] = spec.samplers.module
    if spec.faults:
        modules["faults"] = spec.faults.module
    if spec.shortcuts:
        modules["shortcuts"] = spec.shortcuts
    for role, file in modules.items():
        _check_file(folder, file, spec_file, "shortcuts" if role == "shortcuts"
                    else f"{role}.module")
    return modules


def load_ecosystem(name_or_path: str) -> Ecosystem:
    """A built-in ecosystem by name, or a user's ecosystem folder by path (an empty name
    is neither, not the current folder).  A built-in is loaded once per process and
    placement (the project's files do not change under it); a user's folder each time."""
    candidate = Path(name_or_path)
    if is_stack_ref(name_or_path) and not _is_dir(candidate):
        return _load_stack(name_or_path)
    if name_or_path.strip() and _is_dir(candidate):
        return _load(candidate.resolve())
    if name_or_path in builtin_names():
        return _load_builtin(name_or_path, placement(BUILTIN_DIR / name_or_path, BUILTIN_DIR))
    raise EcosystemError(f"unknown ecosystem {name_or_path!r}: use one of "
                         f"{', '.join(builtin_names())} or a folder holding {SPEC_FILE}")


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, a folder this user may not enter: not an ecosystem
        return False


STACKS_DIR = BUILTIN_DIR.parent / "stacks"
"""The built-in stack files: the tools and scenarios of a stack of built-ins."""


def _load_stack(ref: str) -> Ecosystem:
    """A stack by its members (``files+sql``, with the built-in stack file of exactly those
    members when there is one) or by a stack file's path."""
    try:
        if ref.endswith((".yaml", ".yml")) and Path(ref).is_file():
            extras = _stack_file(Path(ref))
            where = Path(ref).resolve().parent
            return stack.compose([load_ecosystem(m if m in builtin_names() else str(where / m))
                                  for m in extras.members], extras)
        parts = stack.member_refs(ref)
        if all(p in builtin_names() for p in parts):
            names = tuple(sorted(parts))
            return _builtin_stack(names, tuple(placement(BUILTIN_DIR / n, BUILTIN_DIR)
                                               for n in names))
        return stack.compose([load_ecosystem(p) for p in parts])
    except stack.StackError as exc:
        raise EcosystemError(str(exc)) from None


def _stack_file(path: Path) -> StackSpec:
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
        return StackSpec.model_validate(raw)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise EcosystemError(f"{path}: cannot read the stack file: {exc}") from None
    except ValidationError as exc:
        raise EcosystemError(_format_error(path, exc, raw)) from exc


def builtin_named(name: str) -> Ecosystem | None:
    """The built-in ecosystem or stack of built-ins that a dataset calls ``name``; None for
    any other name (a user's folder is not loaded by name)."""
    parts = name.split(stack.JOIN)
    return load_ecosystem(name) if all(p in builtin_names() for p in parts) else None


def is_stack_ref(ref: str) -> bool:
    """``ref`` names a stack: ecosystems joined by ``+``, or a stack file."""
    return stack.is_stack(ref) or ref.endswith((".yaml", ".yml"))


def default_refs() -> list[str]:
    """What a run makes by default: every built-in ecosystem, then every built-in stack."""
    return builtin_names() + [stack.JOIN.join(names) for names in builtin_stacks()]


def builtin_stacks() -> dict[tuple[str, ...], Path]:
    """Sorted member names -> the built-in stack file of those members."""
    return {tuple(sorted(_stack_file(f).members)): f for f in sorted(STACKS_DIR.glob("*.yaml"))}


@cache
def _builtin_stack(names: tuple[str, ...], where: tuple[str, ...]) -> Ecosystem:
    """``where``: the placements its members were loaded for (the cache key, with them)."""
    found = builtin_stacks().get(names)
    return stack.compose([load_ecosystem(n) for n in names],
                         _stack_file(found) if found else None)


@cache
def _load_builtin(name: str, where: str) -> Ecosystem:
    """``where``: the placement it was loaded for (the cache key, with the name)."""
    return _load(BUILTIN_DIR / name)


def _load(folder: Path) -> Ecosystem:
    spec_file = folder / SPEC_FILE
    if not os.path.lexists(spec_file):
        raise EcosystemError(f"{spec_file}: missing; an ecosystem folder needs {SPEC_FILE}")
    try:
        raw = load_yaml(own_text(folder, SPEC_FILE))
    except FolderFileError as exc:
        raise EcosystemError(f"{spec_file}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise EcosystemError(f"{spec_file}: not valid YAML: {where}{problem}") from exc
    if not isinstance(raw, dict):
        raise EcosystemError(f"{spec_file}: expected a mapping at the top level")
    try:
        spec = EcosystemSpec.model_validate(raw)
    except ValidationError as exc:
        raise EcosystemError(_format_error(spec_file, exc, raw)) from exc
    if stack.is_stack(spec.name):
        raise EcosystemError(f"{spec_file}: field 'name': {spec.name!r} has a '+', which joins "
                             "the ecosystems of a stack; name it without one")
    modules = _modules(folder, spec, spec_file)
    for name in spec.image.support:
        _check_file(folder, name, spec_file, "image.support")
    try:
        functions, shapes = load_functions(folder, modules, placement(folder, BUILTIN_DIR))
    except UserCodeError as exc:
        if exc.what == "sandbox":
            raise EcosystemError(f"{folder}: its Python code runs in a sandbox container, "
                                 f"and {exc.detail}; or pass --trust-ecosystem to run it on "
                                 "this host as you (docs/security.md: threat model)") from None
        file = exc.what.removeprefix("import ")
        problem = "takes too long to import" if exc.timed_out else "raises on import"
        raise EcosystemError(f"{folder / file}: {problem}: {exc.detail}") from None
    shortcuts = (SimpleNamespace(**functions["shortcuts"]) if spec.shortcuts else None)
    try:
        contract.check(folder, spec, shapes, shapes.get("shortcuts"))
    except contract.ContractError as exc:
        raise EcosystemError(str(exc)) from None
    _check_bindable(spec, spec_file)
    probe_source = _probe_source(folder, spec, spec_file)
    digest = hashlib.sha256()
    for f in sorted(folder.glob("*")):
        if f.suffix in (".py", ".yaml", ".yml") and f.is_file() and not f.is_symlink():
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
    seed = functions["seed"]
    scales = all(contract.accepts(shape or [], 1, ("scale",)) for name, shape
                 in shapes["seed"].items() if name in (spec.seed.function, "layout"))
    return Ecosystem(spec, folder, seed[spec.seed.function], functions.get("samplers", {}),
                     probe_source, digest.hexdigest()[:16], seed.get("layout"),
                     seed.get("provide"), cast(contract.ShortcutModule | None, shortcuts),
                     functions.get("faults", {}), scales=scales)
