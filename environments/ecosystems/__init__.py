"""Load ecosystems — built-in by name, or a user's folder by path.

An :class:`Ecosystem` bundles the validated spec with the code it names: the seed
generator, the samplers and the probe script's source.  Errors raise
:class:`EcosystemError` with a one-line message naming the file and the field.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from types import ModuleType

import yaml
from pydantic import ValidationError

from schemas.ecosystem import EcosystemSpec

BUILTIN_DIR = Path(__file__).parent
SPEC_FILE = "ecosystem.yaml"

Sampler = Callable[..., str]


class EcosystemError(ValueError):
    """An ecosystem cannot be found or its spec is invalid."""


@dataclass(frozen=True)
class Ecosystem:
    spec: EcosystemSpec
    folder: Path
    seed_fn: Callable[[int], dict[str, bytes]]
    samplers: dict[str, Sampler]
    probe_source: str
    digest: str = field(default="")

    @property
    def name(self) -> str:
        return self.spec.name

    layout_fn: Callable[[int], list[str]] | None = None
    provide_fn: Callable[[str, int], bytes | None] | None = None
    shortcut_hooks: ModuleType | None = None
    """The spec's ``shortcuts`` module (``empty`` and ``fill``), when it names one."""

    def provide(self, path: str, seed: int) -> bytes | None:
        """Content for a workspace file a tool expected but the seed did not lay out, from
        the seed module's optional ``provide(path, seed)``; None when it has none."""
        return self.provide_fn(path, seed) if self.provide_fn is not None else None

    def seed_state(self, seed: int) -> dict[str, bytes]:
        return self.seed_fn(seed)

    def state_paths(self, seed: int) -> list[str]:
        """The seeded file paths, cheaply when the seed module defines ``layout(seed)``."""
        if self.layout_fn is not None:
            return self.layout_fn(seed)
        return sorted(self.seed_fn(seed))

    def state_type(self, path: str) -> str | None:
        """The semantic type of a seeded file, from the spec's ``state_types`` globs."""
        for st in self.spec.state_types:
            if fnmatch(path, st.glob):
                return st.type
        return None

    def sample(self, facet: str, content: bytes, rng: random.Random, **context: str) -> str:
        if facet not in self.samplers:
            raise EcosystemError(f"{self.folder / SPEC_FILE}: no sampler named {facet!r}")
        return self.samplers[facet](content, rng, **context)


def _probe_path(folder: Path, probe: str) -> Path:
    """``probe.py`` in the folder, or ``@files``: the probe of built-in ecosystem ``files``."""
    if not probe.startswith("@"):
        return folder / probe
    spec_file = BUILTIN_DIR / probe[1:] / SPEC_FILE
    if not spec_file.is_file():
        return spec_file.with_name("no-such-probe")
    return spec_file.parent / str(yaml.safe_load(spec_file.read_text()).get("probe", ""))


def builtin_names() -> list[str]:
    return sorted(p.parent.name for p in BUILTIN_DIR.glob(f"*/{SPEC_FILE}"))


def _import(folder: Path, module: str, spec_file: Path, what: str) -> ModuleType:
    path = folder / module
    if not path.is_file():
        raise EcosystemError(f"{spec_file}: field '{what}': file {module!r} does not exist")
    mod_spec = importlib.util.spec_from_file_location(f"taskfactory_eco_{folder.name}_{path.stem}",
                                                      path)
    assert mod_spec and mod_spec.loader
    module_obj = importlib.util.module_from_spec(mod_spec)
    sys.modules[mod_spec.name] = module_obj  # dataclasses and pickling look modules up here
    try:
        mod_spec.loader.exec_module(module_obj)
    except BaseException:
        del sys.modules[mod_spec.name]
        raise
    return module_obj


def _format_error(spec_file: Path, err: ValidationError, raw: dict) -> str:
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


def load_ecosystem(name_or_path: str) -> Ecosystem:
    """A built-in ecosystem by name, or a user's ecosystem folder by path."""
    candidate = Path(name_or_path)
    if candidate.is_dir():
        folder = candidate.resolve()
    elif (BUILTIN_DIR / name_or_path / SPEC_FILE).is_file():
        folder = BUILTIN_DIR / name_or_path
    else:
        raise EcosystemError(f"unknown ecosystem {name_or_path!r}: use one of "
                             f"{', '.join(builtin_names())} or a folder holding {SPEC_FILE}")
    spec_file = folder / SPEC_FILE
    if not spec_file.is_file():
        raise EcosystemError(f"{spec_file}: missing; an ecosystem folder needs {SPEC_FILE}")
    try:
        raw = yaml.safe_load(spec_file.read_text())
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
    seed_mod = _import(folder, spec.seed.module, spec_file, "seed.module")
    seed_fn = getattr(seed_mod, spec.seed.function, None)
    if not callable(seed_fn):
        raise EcosystemError(f"{spec_file}: field 'seed.function': {spec.seed.module} has no "
                             f"function {spec.seed.function!r}")
    samplers: dict[str, Sampler] = {}
    if spec.samplers:
        mod = _import(folder, spec.samplers.module, spec_file, "samplers.module")
        samplers = {n: f for n, f in vars(mod).items() if callable(f) and not n.startswith("_")
                    and getattr(f, "__module__", None) == mod.__name__}
    for tool in spec.tools:
        for p in tool.params:
            if p.sample and p.sample.facet not in samplers:
                raise EcosystemError(f"{spec_file}: field 'tools.{tool.name}.params.{p.name}."
                                     f"sample.facet': no sampler named {p.sample.facet!r}")
    probe_path = _probe_path(folder, spec.probe)
    if not probe_path.is_file():
        raise EcosystemError(f"{spec_file}: field 'probe': {spec.probe!r} names no probe script "
                             f"(a .py file in the folder, or @ plus a built-in ecosystem)")
    probe_source = probe_path.read_text()
    digest = hashlib.sha256()
    for f in sorted(folder.glob("*")):
        if f.is_file() and f.suffix in (".py", ".yaml", ".yml"):
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
    hooks = {name: fn if callable(fn := getattr(seed_mod, name, None)) else None
             for name in ("layout", "provide")}
    shortcuts = None
    if spec.shortcuts:
        shortcuts = _import(folder, spec.shortcuts, spec_file, "shortcuts")
        for name in ("empty", "fill"):
            if not callable(getattr(shortcuts, name, None)):
                raise EcosystemError(f"{spec_file}: field 'shortcuts': {spec.shortcuts} has "
                                     f"no function {name!r}")
    return Ecosystem(spec, folder, seed_fn, samplers, probe_source, digest.hexdigest()[:16],
                     hooks["layout"], hooks["provide"], shortcuts)
