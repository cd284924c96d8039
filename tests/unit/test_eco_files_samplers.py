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
