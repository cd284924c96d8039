"""An ecosystem's Python functions — the seed module's, the samplers', the faults' and
the shortcuts' — as callables that fail one way: :class:`UserCodeError` (a sampler's "no
value fits", a ``LookupError``, ``ValueError`` or ``IndexError`` exactly, passes
through: ``worker.no_value``).

Where the code runs (:func:`placement`):

- a **user's folder** is code the project did not write: its workers run in a sandbox
  container (:mod:`environments.ecosystems.sandbox`), each call under a timeout; with
  ``TASKFACTORY_TRUST_ECOSYSTEMS=1`` (what ``--trust-ecosystem`` sets) they run on this
  host as the invoking user instead, with everything that user may do;
- the **built-ins**, the project's own code, run in this process
  (``TASKFACTORY_ISOLATE_BUILTINS=1``: in workers on this host).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

from environments.ecosystems import worker as inprocess
from environments.ecosystems.contract import Shapes
from environments.ecosystems.usercode import (
    SAMPLER_TIMEOUT_S,
    SEED_TIMEOUT_S,
    Channel,
    HostChannel,
    Opener,
    UserCodeError,
    WorkerPool,
)

TRUST = "TASKFACTORY_TRUST_ECOSYSTEMS"
"""``1``: a user's ecosystem folder is trusted code, run on this host unsandboxed."""
Placement = Literal["in-process", "host", "sandbox"]

Functions = dict[str, dict[str, Callable[..., Any]]]
"""role (``seed``, ``samplers``) -> public function name -> callable."""


def timeout_s(role: str) -> float:
    """A call's timeout: ``TASKFACTORY_SEED_TIMEOUT_S`` / ``TASKFACTORY_SAMPLER_TIMEOUT_S``
    seconds, else the defaults of :mod:`~environments.ecosystems.usercode`."""
    if role == "samplers":
        return float(os.environ.get("TASKFACTORY_SAMPLER_TIMEOUT_S") or SAMPLER_TIMEOUT_S)
    return float(os.environ.get("TASKFACTORY_SEED_TIMEOUT_S") or SEED_TIMEOUT_S)


def trusted() -> bool:
    """Whether the user trusts the ecosystem folders they name (see :data:`TRUST`)."""
    return os.environ.get(TRUST) == "1"


def placement(folder: Path, builtin_dir: Path) -> Placement:
    """Where ``folder``'s code runs (see the module docstring)."""
    if folder.parent != builtin_dir:
        return "host" if trusted() else "sandbox"
    return "host" if os.environ.get("TASKFACTORY_ISOLATE_BUILTINS") == "1" else "in-process"


def load_functions(folder: Path, modules: dict[str, str], where: Placement
                   ) -> tuple[Functions, Shapes]:
    """Import ``modules`` (role -> file in ``folder``) and wrap their public functions,
    also returning their signatures (:mod:`~environments.ecosystems.contract`);
    UserCodeError (what = ``import <file>``) when one raises on import or takes too long,
    (what = ``sandbox``) when no sandbox can be started."""
    if where != "in-process":
        return _in_workers(folder, modules, HostChannel if where == "host" else _sandboxed)
    functions: Functions = {}
    shapes: Shapes = {}
    for role, file in modules.items():
        try:
            module = inprocess.import_module(folder, file)
        except BaseException as exc:
            raise UserCodeError(f"import {file}", inprocess.describe(exc, folder)) from exc
        shapes[role] = inprocess.shapes(module, role in inprocess.VALUE_ROLES)
        functions[role] = {name: partial(_guarded, role, name, getattr(module, name), folder)
                           for name in shapes[role]}
    return functions, shapes


def _what(role: str, name: str, args: tuple[Any, ...]) -> str:
    shown = ", ".join(repr(a) if not isinstance(a, bytes | dict) else "…" for a in args)
    return f"{role}.{name}({shown})"


def _guarded(role: str, name: str, fn: Callable[..., Any], folder: Path, /, *args: Any,
             **kwargs: Any) -> Any:  # positional-only: a sampler's context may be `name=`
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if role in inprocess.VALUE_ROLES and inprocess.no_value(exc):
            raise
        raise UserCodeError(_what(role, name, args), inprocess.describe(exc, folder)) from exc


def _sandboxed(folder: Path, modules: dict[str, str]) -> Channel:
    from environments.ecosystems.sandbox import ContainerChannel  # imports the docker SDK

    return ContainerChannel(folder, modules)


def _in_workers(folder: Path, modules: dict[str, str], opener: Opener
                ) -> tuple[Functions, Shapes]:
    pool = WorkerPool(folder, modules, opener)
    try:
        shapes = pool.start()
    except UserCodeError as exc:
        if exc.what != "import":
            raise
        files = ", ".join(modules.values())
        raise UserCodeError(f"import {files}", exc.detail, exc.timed_out) from None

    def proxy(role: str, name: str, /, *args: Any, **kwargs: Any) -> Any:
        return pool.call(role, name, args, kwargs, timeout_s(role), _what(role, name, args))

    return {role: {name: partial(proxy, role, name) for name in role_shapes}
            for role, role_shapes in shapes.items()}, shapes
