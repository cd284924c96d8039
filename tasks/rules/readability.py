"""Readability of an instruction, counted from its text alone (pure).

One counter serves the ``instruct`` stage (:func:`check_readable`), ``taskfactory
stats`` and the card, and ``benchmarks/readability.py`` (which also counts published
benchmark instructions), so that the figures compare like with like:

- **sentences**: a Markdown text is split into blocks (blank lines, list items, table
  rows, headings), fenced code blocks are left out, and each block is split after ``.``,
  ``!`` or ``?`` followed by a space (or a block's end) and after a ``:`` ending a line;
- **words**: whitespace-separated tokens holding a letter or digit; a code span (any
  `` `...` ``) counts as one word, however long;
- **nesting**: descriptions inside descriptions.  Within a clause (split at ``, ; : ( )``,
  dashes, "and", "or", "then"), each opening of a description counts: a relative word
  (``whose``, ``which``, ``who``, ``where``, ``that`` after a noun), a reduced relative
  ("the commit the tag points to") or a participle after a noun ("the team led by", "a
  ticket titled").  A clause with *n* of them nests *n - 1* deep (0: at most one
  description; 1: one inside another); an instruction's nesting is its deepest clause.
  Prepositions alone ("the subject of the commit") do not count: a heuristic without a
  parser, the same for every text it counts;
- **repeated 6-grams**: a sequence of six words, lower-cased, outside code spans and
  within one line (a code span or a line break ends a sequence), that occurs twice in one
  instruction.

The limits (:data:`LIMITS`) are those of short human-written task instructions: no
sentence over 40 words, nesting at most 1.  The dataset-wide figures (median and p90 of the
longest sentence, share over 40 words, share repeating a 6-gram) are reported, not
enforced per instruction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tasks.core.failures import StageFailure

MAX_WORDS = 40
"""No sentence of an accepted instruction is longer (words)."""
MAX_NESTING = 1
"""No clause of an accepted instruction holds descriptions deeper than this."""
NGRAM = 6

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_CODE = "\x00"
_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|\|)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=:)\s*$")
_WORD = re.compile(r"[A-Za-z0-9\x00]")
_CLAUSE = re.compile(r"[,;:()\u2014\u2013]| - | and | or | then ")
_DESCRIPTIONS = [re.compile(p, re.IGNORECASE) for p in (
    r"\b(?:whose|which|who|whom|where)\b",
    r"(?<!\bof )(?<!\bin )(?<!\bon )(?<!\bto )(?<!\bat )(?<!\bby )(?<!\bis )"
    r"(?<=\w )that\b(?! (?:file|commit|branch|tag|ticket|number|value|customer|table|view"
    r"|user|team|index|one|list|value|entry|row|line)s?\b)",
    r"\b(?:the|a|an) \w+ (?:the|a|an)\b",
    r"\b(?:the|a|an) \w+ \x00 (?:points?|lists?|gives?|names?|counts?) ",
    r"\b\w+ed by\b",
    r"\b(?:titled|named|called|holding|containing)\b",
)]
"""What opens a description inside a noun phrase: a relative word ("whose", "that" after
a noun: "the lines that contain"), a reduced relative ("the commit the tag points to"),
a participle ("the team led by", "a ticket titled")."""


@dataclass(frozen=True)
class Readability:
    """What the counter finds in one instruction."""

    longest: int
    """Words in its longest sentence."""
    longest_sentence: str
    nesting: int
    repeated: str
    """A 6-word sequence outside code spans that occurs twice ('' when none does)."""


def _masked(text: str) -> str:
    """``text`` without fenced code blocks, each code span replaced by one marker word."""
    return _SPAN.sub(_CODE, _FENCE.sub("\n", text))


def sentences(text: str) -> list[str]:
    """The sentences of a Markdown ``text`` (see the module docstring); a code span of
    the text stays one marker character (``\\x00``) in them."""
    blocks: list[list[str]] = []
    for line in _masked(text).splitlines():
        if not line.strip():
            blocks.append([])
        elif _BLOCK_START.match(line) or not blocks or not blocks[-1]:
            blocks.append([line.strip()])
        else:
            blocks[-1].append(line.strip())
    out = []
    for block in blocks:
        for piece in _SENTENCE_END.split(" ".join(block)):
            if words(piece):
                out.append(piece.strip())
    return out


def words(sentence: str) -> int:
    """Words of a masked sentence: tokens with a letter or digit; a code span is one."""
    return sum(1 for tok in sentence.split() if _WORD.search(tok))


def word_count(text: str) -> int:
    """Words of a Markdown text (a code span is one)."""
    return words(_masked(text))


def nesting(sentence: str) -> int:
    """How deep descriptions nest in a masked sentence: in its deepest clause, the
    descriptions it opens, minus one (0: at most one description; 1: one inside another)."""
    deepest = 0
    for clause in _CLAUSE.split(sentence):
        found = sum(len(d.findall(clause)) for d in _DESCRIPTIONS)
        deepest = max(deepest, found - 1)
    return deepest


def repeated_ngram(text: str, n: int = NGRAM) -> str:
    """A sequence of ``n`` words outside code spans that occurs twice in ``text``."""
    seen: set[tuple[str, ...]] = set()
    for run in re.split(r"[\x00\n]", _masked(text)):
        toks = [t.strip(".,;:!?()\"'").lower() for t in run.split()]
        toks = [t for t in toks if t]
        for i in range(len(toks) - n + 1):
            gram = tuple(toks[i:i + n])
            if gram in seen:
                return " ".join(gram)
            seen.add(gram)
    return ""


def readability(text: str) -> Readability:
    """The counter's figures for one instruction."""
    found = sentences(text) or [""]
    longest = max(found, key=words)
    return Readability(longest=words(longest), longest_sentence=longest.replace(_CODE, "`…`"),
                       nesting=max(nesting(s) for s in found), repeated=repeated_ngram(text))


def check_readable(text: str) -> Readability:
    """The instruction's figures; raises ``instruct/unreadable`` naming the sentence when
    one is over :data:`MAX_WORDS` words or nests descriptions deeper than
    :data:`MAX_NESTING`."""
    found = readability(text)
    if found.longest > MAX_WORDS:
        raise StageFailure("instruct", "unreadable",
                           f"a sentence has {found.longest} words (limit {MAX_WORDS}): "
                           f"{found.longest_sentence[:200]!r}")
    for sentence in sentences(text):
        if (depth := nesting(sentence)) > MAX_NESTING:
            shown = sentence.replace(_CODE, "`…`")
            raise StageFailure("instruct", "unreadable",
                               f"a sentence nests descriptions {depth} deep (limit "
                               f"{MAX_NESTING}): {shown[:200]!r}")
    return found


@dataclass(frozen=True)
class Figures:
    """The counter's figures over a set of instructions."""

    instructions: int
    median: float
    """Of the longest sentence per instruction (words)."""
    p90: float
    max: int
    over: float
    """Share of instructions with a sentence over :data:`MAX_WORDS` words."""
    nesting: int
    """Deepest nesting in any of them."""
    repeated: float
    """Share of instructions repeating a 6-word sequence outside code spans."""


def _quantile(values: list[int], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` by linear interpolation (numpy's default)."""
    at = (len(values) - 1) * q
    low = int(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def figures(texts: list[str]) -> Figures:
    """:class:`Figures` of ``texts`` (all zero for none)."""
    return summary([readability(t) for t in texts])


def summary(found: list[Readability]) -> Figures:
    """:class:`Figures` of instructions already counted (all zero for none)."""
    if not found:
        return Figures(0, 0.0, 0.0, 0, 0.0, 0, 0.0)
    longest = sorted(f.longest for f in found)
    n = len(found)
    return Figures(instructions=n, median=_quantile(longest, 0.5), p90=_quantile(longest, 0.9),
                   max=longest[-1], over=sum(x > MAX_WORDS for x in longest) / n,
                   nesting=max(f.nesting for f in found),
                   repeated=sum(bool(f.repeated) for f in found) / n)
