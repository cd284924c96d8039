"""A worker process running an ecosystem folder's code for ``usercode.WorkerPool``.

Started as a script (``python worker.py FOLDER "{role: file}"``), so that it imports
nothing of the project: only the folder's modules and what they import (in a sandbox,
this file is all of the project it has).  Frames on stdin and stdout are an 8-byte
big-endian length and a message in :func:`encode`'s JSON — never a pickle: the host
decodes what a sandboxed worker sends, and unpickling it would run the worker's code on
the host.  The first answer says whether the modules imported (``["import_error", [file,
message]]`` if one did not, and which functions they define, with their signatures:
``signature_shape``); then each request ``[role, function, args, kwargs]`` gets ``["ok",
result]``, ``["no_value", [kind, message]]`` when a sampler says no value fits
(:func:`no_value`), or ``["error", [type, message]]``.
The user's code prints to stderr, never into the channel.  SIGINT is ignored; stdin EOF
ends the worker at once, also in the middle of a call, so a worker never outlives the
process that talks to it.
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import inspect
import json
import os
import queue
import random
import signal
import struct
import sys
import threading
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

HEADER = struct.Struct(">Q")
NO_VALUE = (LookupError, ValueError, IndexError)
"""What a sampler raises when no value fits: these types exactly (``IndexError``: the
``rng.choice`` of an empty list).  Their subclasses are bugs: a ``KeyError`` is a missing
key, a ``UnicodeDecodeError`` or ``JSONDecodeError`` content the sampler misread."""


VALUE_ROLES = ("samplers", "faults")
"""Modules whose public functions are their own (imported helpers are not theirs) and
whose ``NO_VALUE`` exceptions mean "nothing fits" (a fault's: the seed has no place for
its defect) rather than a bug."""


def no_value(exc: BaseException) -> bool:
    """Whether a sampler's ``exc`` means "no value fits" (else its code failed)."""
    return type(exc) in NO_VALUE


def import_module(folder: Path, file: str) -> ModuleType:
    path = folder / file
    spec = importlib.util.spec_from_file_location(f"taskfactory_eco_{folder.name}_{path.stem}",
                                                  path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def public_functions(module: ModuleType, own_only: bool) -> list[str]:
    """The public callables of ``module`` (with ``own_only``, those it defines itself)."""
    return sorted(n for n, f in vars(module).items() if callable(f) and not n.startswith("_")
                  and (not own_only or getattr(f, "__module__", None) == module.__name__))


def signature_shape(fn: Any) -> list[tuple[str, str, bool]] | None:
    """``fn``'s parameters as (name, kind, has a default), as ``contract.Shape`` reads them;
    None when Python cannot tell (some builtins)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind.name, p.default is not p.empty) for p in params]


def shapes(module: ModuleType, own_only: bool) -> dict[str, list[tuple[str, str, bool]] | None]:
    """Every public function of ``module`` with its :func:`signature_shape`."""
    return {name: signature_shape(getattr(module, name))
            for name in public_functions(module, own_only)}


def describe(exc: BaseException, folder: Path) -> str:
    """``Type: message (file.py, line N)``, the line being the deepest one in the folder."""
    where = [f for f in traceback.extract_tb(exc.__traceback__)
             if Path(f.filename).parent == folder]
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({Path(exc.filename).name}, line {exc.lineno})"
    at = f" ({Path(where[-1].filename).name}, line {where[-1].lineno})" if where else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{at}"


def encode(value: Any) -> bytes:
    """``value`` as JSON in which every object is a tag: ``{"b": base64}`` bytes, ``{"d":
    [[key, value], ...]}`` a dict, ``{"r": state}`` a ``random.Random``; lists (and
    tuples, which decode as lists), strings, numbers, booleans and null as themselves.
    TypeError for any other type."""
    return json.dumps(_tagged(value), separators=(",", ":")).encode()


def decode(data: bytes) -> Any:
    """The value :func:`encode` made: only those types can come out, whatever ``data``
    holds (ValueError, TypeError or RecursionError for anything else)."""
    return _untagged(json.loads(data))


def _tagged(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        return {"b": base64.b64encode(value).decode()}
    if isinstance(value, list | tuple):
        return [_tagged(v) for v in value]
    if isinstance(value, dict):
        return {"d": [[_tagged(k), _tagged(v)] for k, v in value.items()]}
    if isinstance(value, random.Random):
        version, internal, gauss = value.getstate()
        return {"r": [version, list(internal), gauss]}
    raise TypeError(f"a {type(value).__name__} cannot be passed (bytes, str, numbers, "
                    "lists and dicts can)")


def _untagged(value: Any) -> Any:
    if isinstance(value, list):
        return [_untagged(v) for v in value]
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    if tag == "b" and isinstance(inner, str):
        return base64.b64decode(inner, validate=True)
    if tag == "d" and isinstance(inner, list):
        return {_scalar(_untagged(k)): _untagged(v) for k, v in inner}
    if tag == "r" and isinstance(inner, list) and len(inner) == 3:
        rng = random.Random()
        rng.setstate((inner[0], tuple(inner[1]), inner[2]))
        return rng
    raise ValueError(f"not a tagged value: {str(value)[:80]}")


def _scalar(key: Any) -> Any:
    if key is None or isinstance(key, bool | int | float | str | bytes):
        return key
    raise TypeError(f"a dict key must be a string or a number, not {type(key).__name__}")


def _requests(source: BinaryIO, inbox: queue.Queue[Any]) -> None:
    """Read requests into ``inbox``; at EOF (the host is gone) end the process at once."""
    while True:
        header = source.read(HEADER.size)
        if len(header) < HEADER.size:
            os._exit(0)
        inbox.put(decode(source.read(HEADER.unpack(header)[0])))


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    folder, modules = Path(sys.argv[1]), ast.literal_eval(sys.argv[2])
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the user's code prints goes to stderr

    def send(status: str, value: object) -> None:
        try:
            data = encode([status, value])
        except (TypeError, ValueError, RecursionError) as exc:
            data = encode(["error", ["TypeError", f"returned what cannot be passed: {exc}"]])
        out.write(HEADER.pack(len(data)) + data)
        out.flush()

    inbox: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_requests, args=(sys.stdin.buffer, inbox), daemon=True).start()
    loaded = {}
    for role, file in modules.items():
        try:
            loaded[role] = import_module(folder, file)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported, none raised
            send("import_error", (file, describe(exc, folder)))
            return
    send("ok", {role: shapes(module, role in VALUE_ROLES) for role, module in loaded.items()})
    while True:
        role, function, args, kwargs = inbox.get()
        try:
            result = getattr(loaded[role], function)(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001
            if role in VALUE_ROLES and no_value(exc):
                send("no_value", (type(exc).__name__, str(exc)))
                continue
            send("error", (type(exc).__name__, describe(exc, folder)))
            continue
        send("ok", result)


if __name__ == "__main__":
    main()
