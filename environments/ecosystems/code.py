"""An ecosystem's Python functions — the seed module's and the samplers' — as callables
that fail one way: :class:`UserCodeError` (a sampler's "no value fits", a
``LookupError``, ``ValueError`` or ``IndexError`` exactly, passes through:
``worker.no_value``).

A user's folder runs in worker processes, each call under a timeout
(:mod:`environments.ecosystems.usercode`); the built-ins, the project's own code, run in
this process (``TASKFACTORY_ISOLATE_BUILTINS=1`` runs them in workers too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from environments.ecosystems import worker as inprocess
from environments.ecosystems.contract import Shapes
from environments.ecosystems.usercode import (
    SAMPLER_TIMEOUT_S,
    SEED_TIMEOUT_S,
    UserCodeError,
    WorkerPool,
)

Functions = dict[str, dict[str, Callable[..., Any]]]
"""role (``seed``, ``samplers``) -> public function name -> callable."""


def timeout_s(role: str) -> float:
    """A call's timeout: ``TASKFACTORY_SEED_TIMEOUT_S`` / ``TASKFACTORY_SAMPLER_TIMEOUT_S``
    seconds, else the defaults of :mod:`~environments.ecosystems.usercode`."""
    if role == "samplers":
        return float(os.environ.get("TASKFACTORY_SAMPLER_TIMEOUT_S") or SAMPLER_TIMEOUT_S)
    return float(os.environ.get("TASKFACTORY_SEED_TIMEOUT_S") or SEED_TIMEOUT_S)


def isolated(folder: Path, builtin_dir: Path) -> bool:
    """Whether ``folder``'s code runs in workers: a user's folder always."""
    return folder.parent != builtin_dir or os.environ.get("TASKFACTORY_ISOLATE_BUILTINS") == "1"


def load_functions(folder: Path, modules: dict[str, str], in_workers: bool
                   ) -> tuple[Functions, Shapes]:
    """Import ``modules`` (role -> file in ``folder``) and wrap their public functions,
    also returning their signatures (:mod:`~environments.ecosystems.contract`);
    UserCodeError (what = ``import <file>``) when one raises on import or takes too long."""
    if in_workers:
        return _in_workers(folder, modules)
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


def _in_workers(folder: Path, modules: dict[str, str]) -> tuple[Functions, Shapes]:
    pool = WorkerPool(folder, modules)
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
