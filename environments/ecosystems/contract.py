"""What an ecosystem folder's Python code must provide, checked when the ecosystem loads.

Three kinds of module, typed as protocols below:

- the **seed module** (``seed.module``): ``generate(seed, scale=1) -> {path: bytes}``
  (the name ``seed.function`` says; ``scale`` is optional: at ``scale`` > 1, the hard
  tier, every family of entries is ``scale`` times as large, with distractors, and scale
  1 gives the bytes ``generate(seed)`` gives; a module without it makes no hard-tier
  tasks), optional ``layout(seed, scale=1) -> [path]`` and optional
  ``provide(path, seed) -> bytes | None``;
- the **sampler module** (``samplers.module``): each sampler a tool names is
  ``sampler(content, rng, **context) -> str``, where ``content`` is the bytes of the file
  bound to ``sample.of`` (or the probe state, a dict, without ``of``) and ``context``
  holds the arguments named by ``sample.with``;
- the **shortcut module** (``shortcuts``): ``empty(key, expected)`` and
  ``fill(key, expected, literals)``, each a shell command or None;
- the **faults module** (``faults.module``): each injector's ``plant(files, seed)``
  returns the seed files with one defect planted (LookupError: the seed has no place
  for it).

The YAML side has one contract of its own that code relies on: a read tool with a value
output (``ToolSpec.observes_value``: parser ``int`` or ``text``, a non-scalar type) prints
exactly one value, deterministic for the state (ties rejected by its ``ambiguity_check``
or broken by a rule its intent states), which later steps take as a typed input
(docs/ecosystem-reference.md, "Value outputs").

A user's folder is imported in worker processes, so the check works on the signatures a
worker reports (:data:`Shapes`, made by ``worker.signature_shape``) rather than on the
functions themselves.  A mismatch raises :class:`ContractError`, one line naming the file
and the function.  Return values are checked by the ecosystem conformance suite
(tests/integration/test_ecosystem_conformance.py), which calls every function.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from schemas.ecosystem import EcosystemSpec

Shape = list[tuple[str, str, bool]]
"""A function's parameters: (name, kind, has a default), kind as ``inspect.Parameter``
names it (``POSITIONAL_ONLY``, ``POSITIONAL_OR_KEYWORD``, ``VAR_POSITIONAL``,
``KEYWORD_ONLY``, ``VAR_KEYWORD``)."""
Shapes = dict[str, dict[str, Shape | None]]
"""role (``seed``, ``samplers``) -> public function name -> its shape (None: unknown)."""


class Generate(Protocol):
    """``generate(seed)``, or ``generate(seed, scale=1)`` where the module makes the hard
    tier's larger states (``Ecosystem.scales``)."""

    def __call__(self, seed: int, /, **scale: int) -> dict[str, bytes]: ...


class Layout(Protocol):
    def __call__(self, seed: int, /, **scale: int) -> list[str]: ...


class Provide(Protocol):
    def __call__(self, path: str, seed: int, /) -> bytes | None: ...


class Sampler(Protocol):
    def __call__(self, content: bytes | dict[str, Any], rng: random.Random, /,
                 **context: str) -> str: ...


class Plant(Protocol):
    def __call__(self, files: dict[str, bytes], seed: int, /) -> dict[str, bytes]: ...


class ShortcutModule(Protocol):
    def empty(self, key: str, expected: Any, /) -> str | None: ...
    def fill(self, key: str, expected: Any, literals: list[str], /) -> str | None: ...


class ContractError(ValueError):
    """An ecosystem function does not take what taskfactory passes it."""


def accepts(shape: Shape, positional: int, keywords: Iterable[str] = ()) -> bool:
    """True when a function of ``shape`` can be called with ``positional`` arguments and
    the ``keywords`` (and needs nothing else)."""
    slots = [(n, k, d) for n, k, d in shape if k in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    if len(slots) < positional and not any(k == "VAR_POSITIONAL" for _, k, _ in shape):
        return False
    named = {n for n, k, _ in shape if k in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")}
    by_position = {n for n, _, _ in slots[:positional]}
    var_keyword = any(k == "VAR_KEYWORD" for _, k, _ in shape)
    for word in keywords:
        if word in by_position or (word not in named and not var_keyword):
            return False
    given = by_position | set(keywords)
    return all(d or n in given for n, k, d in shape
               if k not in ("VAR_POSITIONAL", "VAR_KEYWORD"))


def _describe(name: str, shape: Shape) -> str:
    marks = {"VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}
    return f"{name}({', '.join(marks.get(k, '') + n for n, k, _ in shape)})"


def _require(file: Path, name: str, shape: Shape | None, call: str, positional: int,
             keywords: Iterable[str] = ()) -> None:
    if shape is not None and not accepts(shape, positional, keywords):
        raise ContractError(f"{file}: function {_describe(name, shape)} cannot be called as "
                            f"{call}; give it that signature")


def check(folder: Path, spec: EcosystemSpec, shapes: Shapes,
          shortcuts: Mapping[str, Shape | None] | None = None) -> None:
    """Check the folder's functions against the contract; ContractError on a mismatch.
    ``shortcuts`` holds the public functions of the shortcut module with their shapes,
    when the spec names one."""
    spec_file, seed_file = folder / "ecosystem.yaml", folder / spec.seed.module
    seed = shapes.get("seed", {})
    if spec.seed.function not in seed:
        raise ContractError(f"{spec_file}: field 'seed.function': {spec.seed.module} has no "
                            f"function {spec.seed.function!r}")
    _require(seed_file, spec.seed.function, seed[spec.seed.function],
             f"{spec.seed.function}(seed)", 1)
    _require(seed_file, "layout", seed.get("layout"), "layout(seed)", 1)
    _require(seed_file, "provide", seed.get("provide"), "provide(path, seed)", 2)
    samplers = shapes.get("samplers", {})
    for tool in spec.tools:
        for p in tool.params:
            if p.sample is None:
                continue
            file = folder / (spec.samplers.module if spec.samplers else "samplers.py")
            if p.sample.facet not in samplers:
                raise ContractError(f"{spec_file}: field 'tools.{tool.name}.params.{p.name}."
                                    f"sample.facet': no sampler named {p.sample.facet!r}")
            call = ", ".join(["content", "rng", *(f"{w}=..." for w in p.sample.with_)])
            _require(file, p.sample.facet, samplers[p.sample.facet],
                     f"{p.sample.facet}({call})", 2, p.sample.with_)
    for tool in spec.tools:
        if tool.returns.sample is not None and tool.returns.sample not in samplers:
            raise ContractError(f"{spec_file}: field 'tools.{tool.name}.returns.sample': no "
                                f"sampler named {tool.returns.sample!r}")
    for d in spec.describers:
        file = folder / (spec.samplers.module if spec.samplers else "samplers.py")
        if d.facet not in samplers:
            raise ContractError(f"{spec_file}: field 'describers.{d.name}.facet': no sampler "
                                f"named {d.facet!r}")
        _require(file, d.facet, samplers[d.facet], f"{d.facet}(content, rng, value=...)", 2,
                 ("value",))
    plants, module = shapes.get("faults", {}), spec.faults.module if spec.faults else ""
    for fault in spec.faults.injectors if spec.faults else []:
        if fault.plant not in plants:
            raise ContractError(f"{spec_file}: field 'faults.injectors.{fault.name}.plant': "
                                f"{module} has no function {fault.plant!r}")
        _require(folder / module, fault.plant, plants[fault.plant],
                 f"{fault.plant}(files, seed)", 2)
    if spec.shortcuts is not None:
        file = folder / spec.shortcuts
        for name, positional in (("empty", 2), ("fill", 3)):
            if name not in (shortcuts or {}):
                raise ContractError(f"{spec_file}: field 'shortcuts': {spec.shortcuts} has no "
                                    f"function {name!r}")
            args = "key, expected" + (", literals" if name == "fill" else "")
            _require(file, name, (shortcuts or {})[name], f"{name}({args})", positional)
