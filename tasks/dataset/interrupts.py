"""Ctrl-C that a library turned into an ordinary exception is still Ctrl-C.

DuckDB checks for signals while a query runs; on SIGINT it cancels the query and raises
``RuntimeError("Query interrupted")`` instead of the ``KeyboardInterrupt`` (in versions
with one, ``duckdb.InterruptException``).  A run interrupted while it reads its dataset
must still stop as interrupted: exit 130 and the resume hint, not a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def is_interrupt(exc: BaseException) -> bool:
    """True for a KeyboardInterrupt, or a query DuckDB cancelled because of one."""
    return isinstance(exc, KeyboardInterrupt) or (
        type(exc).__name__ == "InterruptException"
        or (isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"))


@contextmanager
def keyboard_interrupts() -> Iterator[None]:
    """Raise KeyboardInterrupt where an interrupt surfaced as another exception in the
    block (usable as a decorator too, but not on a Prefect flow: its parameter model
    resolves the annotations in the wrapped function's module)."""
    try:
        yield
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from exc
        raise
