"""The files ecosystem's samplers draw values a person would write."""

import random

import pytest

from environments.ecosystems import load_ecosystem

FILES = load_ecosystem("files")


def test_a_prefix_keeps_two_lines_or_more():
    """"the first `1` lines" came from a two-line file; a prefix is now two lines or more,
    and a file too short for one offers none."""
    with pytest.raises(LookupError):
        FILES.sample("line_count", b"a\nb\n", random.Random(0))
    drawn = {FILES.sample("line_count", b"a\nb\nc\n", random.Random(i)) for i in range(20)}
    assert drawn == {"2"}
    ten = b"".join(b"%d\n" % i for i in range(10))
    assert {int(FILES.sample("line_count", ten, random.Random(i))) for i in range(50)} \
        <= set(range(5, 10))


def test_a_search_word_has_four_characters_or_more_where_the_file_has_one():
    """"the lines that contain `for`" also matched "format" and "before"; a short word is
    drawn only when the file offers nothing longer."""
    text = b"".join(b"%s the %s report\n" % pair for pair in (
        (b"for", b"daily"), (b"lot", b"weekly"), (b"for", b"daily"), (b"lot", b"weekly")))
    drawn = {FILES.sample("token", text, random.Random(i)) for i in range(40)}
    assert drawn and all(len(w) >= 4 for w in drawn)
    short = b"ab cde\nab fgh\nab cde\nxy fgh\n"
    assert {FILES.sample("token", short, random.Random(i)) for i in range(20)} \
        <= {"cde", "fgh"}


def test_a_log_is_searched_for_trouble_not_for_its_routine_level():
    """"the lines that contain `INFO`" of the log with the most errors: the most common
    words of a log are its routine level and function words; a search draws a word that
    tells something, down to one on a twentieth of the lines."""
    events = [b"connection refused by db", b"cache miss for user", b"payment captured"]
    log = b"".join(b"2026-01-01T00:00:%02dZ %s [api] %s with retry\n"
                   % (i, b"ERROR" if i % 10 == 0 else b"INFO ", events[i % 3])
                   for i in range(60))
    drawn = {FILES.sample("token", log, random.Random(i)) for i in range(60)}
    assert drawn and not drawn & {"INFO", "with"}, drawn
    assert drawn <= {"connection", "refused", "cache", "miss", "user", "payment", "captured",
                     "ERROR"}, drawn
