"""The progress line: a plain line at a fixed interval off a terminal (also while nothing
ends), a live line rewritten in place on a terminal (a real pty), nothing with --quiet."""

import io
import os
import select
import time

from flows.run.progress import QUIET, Ticker


def test_off_a_terminal_a_line_comes_every_interval_while_nothing_ends():
    out = io.StringIO()
    with Ticker(3, out, every_s=0.2) as ticker:
        time.sleep(0.9)  # no item ends: the lines still come
        ticker.done(True)
        ticker.done(False)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4, lines  # ~4 beats and the closing line
    assert lines[0].startswith("0/3 done, 0 accepted, 0 rejected") and "ETA -" in lines[0]
    assert lines[-1].startswith("2/3 done, 1 accepted, 1 rejected, ")
    assert "\r" not in out.getvalue()


def test_on_a_terminal_the_line_is_rewritten_in_place():
    primary, secondary = os.openpty()
    with os.fdopen(secondary, "w") as tty:
        with Ticker(2, tty, words=("written", "errored")) as ticker:
            ticker.done(True)
            time.sleep(1.3)  # a beat refreshes the elapsed time
            ticker.done(True)
        shown = b""  # all the pty holds, chunk by chunk, while its other end is open
        while select.select([primary], [], [], 0.5)[0]:
            shown += os.read(primary, 65536)
    os.close(primary)
    shown = shown.decode()
    assert shown.count("\r") >= 3 and "\x1b[K" in shown
    assert "1/2 done, 1 written, 0 errored" in shown and "2/2 done, 2 written" in shown
    assert shown.endswith("\n")


def test_quiet_shows_nothing(monkeypatch):
    monkeypatch.setenv(QUIET, "1")
    out = io.StringIO()
    with Ticker(2, out, every_s=0.05) as ticker:
        time.sleep(0.2)
        ticker.done(True)
    assert out.getvalue() == ""


def test_the_cli_takes_quiet_where_progress_shows():
    from flows.cli import build_parser

    for words in (["run"], ["solve", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"],
                  ["check-harbor", "x"], ["export", "harbor", "--out", "x"], ["repair"]):
        assert build_parser().parse_args([*words, "--quiet"]).quiet is True
