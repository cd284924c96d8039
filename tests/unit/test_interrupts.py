"""Ctrl-C while DuckDB runs a query is still Ctrl-C (DuckDB cancels the query with a
RuntimeError instead)."""

import os
import signal
import threading

import duckdb
import pytest

from tasks.dataset.interrupts import keyboard_interrupts


@keyboard_interrupts()
def long_query() -> None:
    duckdb.connect().execute("select count(*) from range(100000000000) a").fetchall()


def test_sigint_during_a_duckdb_query_is_a_keyboard_interrupt():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            long_query()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_other_errors_pass_through():
    @keyboard_interrupts()
    def fails() -> None:
        raise RuntimeError("a real error")

    with pytest.raises(RuntimeError, match="a real error"):
        fails()
