"""Discourse: a goal-level instruction as short sentences instead of one noun phrase.

Composition (:mod:`tasks.rules.compose`) names a consumed result by what it is.  Nested
inside the phrase of the step that uses it, that makes one noun phrase of a whole
workflow ("the subject line of the commit a new branch that starts at the commit a new
annotated tag on ... points to").  A discourse says each such result once, in a sentence
of its own, and afterwards refers back to it:

- a lookup (a read whose value a later step takes): "Find the open ticket with the most
  comments."  Later: "that ticket";
- a new entry an intermediate step creates: "Create a new branch pointing at ...", later
  "the new branch"; a result written somewhere the solver chooses: "Write the lines that
  contain `ERROR` in `logs/app.log` to a file of your choice.", later "that file";
- a change of an entry in place: "Change that branch: one new commit on its tip ...";
  the entry keeps its reference;
- a literal named by a description with a definition in parentheses ("the shop's
  database (the file holding table `customers`)") is defined once ("The shop's database
  is the file holding table `customers`.") and named by its head afterwards; where the
  ecosystem's context already says what the head is, it is only named.

A reference is ``that <noun>`` (``the new <noun>`` for a new entry), the noun read from
the result's semantic type; when two results of one noun are introduced (or one is, and
a listed item creates a record of that noun), each gets a letter ("call it file A").
Sentences come in the order the results are first needed, a result's own inputs first.
Pure: nothing runs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING

from tasks.rules.deliverables import changes_in_place, names_own_entry
from tasks.rules.readability import NGRAM, word_count

if TYPE_CHECKING:
    from tasks.rules.compose import Composer

_NOUNS = {"int": "number", "number": "number", "text": "value", "git.ref.head": "branch",
          "git.ref.commit": "commit"}
_GENERIC = frozenset({"id", "ref", "stored", "lines", "log", "csv", "json", "sha256", "key",
                      "name"})
_DEFINED = re.compile(r"^(?P<head>[^()]+?) \((?P<definition>[^()]+)\)$")


_HEAD_END = frozenset({"whose", "that", "which", "titled", "named", "with", "of", "in",
                       "at", "on", "led", "called", "holding", "under", "from", "where"})


def head_noun(description: str) -> str:
    """The noun a description is about: the last word before its first modifier ("the
    commit whose subject ..." -> ``commit``, "the open ticket titled ..." -> ``ticket``)."""
    head = []
    for word in description.split()[1:]:
        if word.lower() in _HEAD_END or "`" in word:
            break
        head.append(word)
    return head[-1].strip(",.") if head else "one"


def noun_of(semantic_type: str) -> str:
    """The noun a reference to a result of ``semantic_type`` uses: ``file`` for a file,
    ``number`` for an ``int``, else the type's most specific word (``sql.table.view`` ->
    ``view``, ``sql.customer_id`` -> ``customer``, ``service.ticket`` -> ``ticket``)."""
    if semantic_type in _NOUNS:
        return _NOUNS[semantic_type]
    parts = semantic_type.split(".")
    if parts[0] in ("file", "path"):
        return "file"
    if parts[0] == "text":
        return "value"
    words = [p for p in parts[1:] if p not in _GENERIC] or parts[:1]
    return words[-1].removesuffix("_id").replace("_", " ")


@dataclass(frozen=True)
class Sentence:
    """One sentence of the discourse; it describes step ``step`` (or, ``shared``, defines a
    described literal for the whole instruction)."""

    text: str
    step: int = -1
    shared: bool = False

    @property
    def target(self) -> str:
        return f"the sentence {self.text[:40]!r}"

    @property
    def described(self) -> tuple[int, ...]:
        return () if self.shared else (self.step,)

    @property
    def own(self) -> tuple[str, ...]:
        return ()


def _capital(text: str) -> str:
    if text.startswith("("):
        return "(" + _capital(text[1:])
    return text[:1].upper() + text[1:]


_SELF_POINTER = re.compile(r"\bthe (\w+) ((?:that|the new) \1|\1 [A-Z]) points to\b")
_SELF_KEY = re.compile(r"\bthe (\w+) whose \1(?:_id)? is ((?:that|the new) \1|\1 [A-Z])\b")
"""A referent named by its own key: "the customer whose customer_id is that customer"."""
_TRAILING_ASIDE = re.compile(r"^(?P<main>.*\S) \((?P<aside>[^()]+)\)(?P<rest>[^()]*)$", re.DOTALL)
LONG = 20
"""Words past which a phrase's closing aside becomes a sentence of its own."""


def split_aside(text: str, words: int) -> str:
    """``text`` (a phrase of ``words`` words, without its final stop) with a closing
    parenthetical aside made a sentence of its own when the phrase is long: "a new branch
    ... on top (one new commit keeping ...)" -> "a new branch ... on top. (One new commit
    keeping ...)".  What follows the aside ("..., on one line") stays before it."""
    m = _TRAILING_ASIDE.match(text)
    if words <= LONG or m is None or len(m["rest"].split()) > 6:
        return text
    return f"{m['main']}{m['rest']}. ({_capital(m['aside'])})"


class Discourse:
    """The sentences that introduce a composer's intermediate results, and the references
    to them (see the module docstring)."""

    def __init__(self, composer: Composer) -> None:
        self.composer = composer
        self.sentences: list[Sentence] = []
        self._names: dict[int, str] = {}
        self._defined: dict[str, str] = {}
        self._context: list[str] = []
        self._said: set[str] = set()
        introduced = {u for i in range(len(composer.trace.steps))
                      for u in composer.folded(i).values() if u not in composer.flow.listed}
        used = {str(v) for st in composer.trace.steps for v in st.args.values()}
        self._used_described = [x for x in composer.described if x in used
                                and _DEFINED.match(composer.described[x]) is None]
        nouns = [self._noun(u) for u in introduced]
        nouns += [head_noun(t) for x, t in composer.described.items()
                  if x in used and _DEFINED.match(t) is None]
        # a record a listed step creates competes for "that <noun>" too: with a new user
        # in the list, "that user" for the user found could mean either
        nouns += {noun_of(composer.tool(i).returns.type) for i in composer.flow.listed
                  if composer.tool(i).creates}
        self._shared_nouns = {n for n, k in Counter(nouns).items() if k > 1}
        self._letters: Counter[str] = Counter()

    def _noun(self, u: int) -> str:
        return noun_of(self.composer.tool(u).returns.type)

    def trim(self, text: str) -> str:
        """``text`` without the context a defining sentence already gave: "(in the shop's
        database)" once the shop's database is defined, and "in the shop's database"
        after its first mention.  Context is said once."""
        for head in self._context:
            text = text.replace(f" (in {head})", "")
            if head in self._said:  # said once already
                text = text.replace(f" in {head}", "")
            elif f" in {head}" in text:
                self._said.add(head)
        return text

    def finish(self, text: str) -> str:
        """A phrase as a sentence or item shows it: :meth:`trim`, "the commit that commit
        points to" and "the customer whose customer_id is that customer" said as "that
        commit" and "that customer", and :func:`split_aside`."""
        text = _SELF_KEY.sub(r"\2", _SELF_POINTER.sub(r"\2", self.trim(text)))
        return split_aside(text, word_count(text))

    def define(self, literal: str) -> str:
        """How the text names a described literal: its description the first time, or,
        when the description carries a definition in parentheses, its head everywhere, and
        a sentence defining it unless the ecosystem's context already says what the head is
        ("The shop's database ... has the tables ...")."""
        if literal in self._defined:
            return self._defined[literal]
        text = self.composer.described[literal]
        m = _DEFINED.match(text)
        if m is not None:
            short = m["head"]
            self._context.append(short)
            if short.lower() not in self.composer.spec.context.lower():
                self.sentences.append(Sentence(f"{_capital(short)} is {m['definition']}.",
                                               shared=True))
        else:  # found by a sentence of its own, like a lookup
            short = self._find(literal, text)
        self._defined[literal] = short
        return short

    def _find(self, literal: str, text: str) -> str:
        """A sentence finding a described literal, and its name.  Literals described alike
        (two commits by their subject line) share one sentence, each named by a letter:
        "Find the commit whose subject line is `a` (call it commit A), and likewise `b`
        (commit B)." """
        noun = head_noun(text)
        described = self.composer.described
        group = [x for x in self._used_described
                 if _SPAN.sub("``", described[x]) == _SPAN.sub("``", text)]
        if len(group) < 2 or not _SPAN.search(text):
            short = self._letter(noun) or f"that {noun}"
            call = f"; call it {short}" if not short.startswith("that ") else ""
            self.sentences.append(Sentence(f"Find {text}{call}.", shared=True))
            return short
        names = {x: self._letter(noun) or f"{noun} {chr(ord('A') + k)}"
                 for k, x in enumerate(group)}
        first, *others = group
        theirs = {m.group(0) for m in _SPAN.finditer(described[first])}
        likewise = ", ".join(
            " ".join(m.group(0) for m in _SPAN.finditer(described[x])
                     if m.group(0) not in theirs) + f" ({names[x]})" for x in others)
        self.sentences.append(Sentence(
            f"Find {described[first]} (call it {names[first]}), and likewise {likewise}.",
            shared=True))
        self._defined.update(names)
        return names[literal]

    def _letter(self, noun: str) -> str:
        """``<noun> A``, ``<noun> B``... when several things of one noun are introduced."""
        if noun not in self._shared_nouns:
            return ""
        self._letters[noun] += 1
        return f"{noun} {chr(ord('A') + self._letters[noun] - 1)}"

    def refer(self, u: int) -> str:
        """The reference to step ``u``'s result, introducing it by a sentence first."""
        if u in self._names:
            return self._names[u]
        c = self.composer
        tool = c.tool(u)
        noun = self._noun(u)
        letter = "" if changes_in_place(tool) else self._letter(noun)
        if tool.effect == "read":
            text, name = f"Find {c.ref(u)}", letter or f"that {noun}"
        elif changes_in_place(tool):
            entry = c.label(u)
            change = c.phrase(u)
            text = f"Make this so: {change}" if names_own_entry(tool) \
                else f"Change {entry}: {change}"
            name = entry
        else:
            what = c.ref(u)
            if re.match(r"(a|an) ", what):
                text, name = f"Create {what}", letter or f"the new {noun}"
            else:
                where = f"a new {noun}" if letter else f"a {noun} of your choice"
                text = f"In {where}{f' ({letter})' if letter else ''}, write {what}"
                name = letter or f"that {noun}"
                letter = ""
        if letter:
            text += f"; call it {letter}"
        self.sentences.append(Sentence(f"{_capital(self.finish(text))}.", step=u))
        self._names[u] = name
        return name


_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_BREAKS = (re.compile(r"; "), re.compile(r"(?<=[\w\x00]): (?=[a-z\x00])"),
           re.compile(r", (?:and|but|so) (?=\w+ \w)"), re.compile(r" \u2014 (?=\w)"),
           re.compile(r", (?=(?:ordered|sorted|holding|keeping|then|each)\b)"),
           re.compile(r", (?=as (?:a|an|one|two|three|four|JSON|plain|bare)\b)"),
           re.compile(r" (?=\([^()]+\)[.,]?$)"))
"""Where a long sentence breaks, best first: a semicolon, a colon that opens a clause, a
comma before a conjunction that opens one, a dash, a comma before a participle that
qualifies what came before ("..., ordered by ..."), a comma before the answer's format
("..., as three integers ..."), a closing aside in parentheses."""


_PARTICIPLES = {"holding": "It holds", "keeping": "It keeps", "ordered": "It is ordered",
                "sorted": "It is sorted", "as": "Write it as"}
"""A participle that opens the rest of a broken sentence, as the verb of a clause."""


def _break(sentence: str) -> str:
    """``sentence`` (code spans masked) broken once at its best boundary past its first
    four words and before its last four, the rest starting a sentence of its own (a
    leading participle made its verb: ", holding ..." -> ". It holds ...")."""
    for boundary in _BREAKS:
        for m in boundary.finditer(sentence):
            head, tail = sentence[:m.start()], sentence[m.end():]
            if len(head.split()) > 4 and len(tail.split()) > 3:
                first, _, rest = tail.partition(" ")
                if first in _PARTICIPLES:
                    tail = f"{_PARTICIPLES[first]} {rest}"
                return f"{head}. {_capital(tail)}"
    return sentence


def _masking(edit: Callable[[str], str]) -> Callable[[str], str]:
    """``edit`` applied to a Markdown text with each code span masked (``\\x00n\\x00``, the
    same marker for the same span), so that it never breaks or changes one."""

    @wraps(edit)
    def masked(text: str) -> str:
        spans: list[str] = []

        def keep(m: re.Match[str]) -> str:  # one marker per distinct span
            if m.group(0) not in spans:
                spans.append(m.group(0))
            return f"\x00{spans.index(m.group(0))}\x00"

        done = edit(_SPAN.sub(keep, text))
        return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], done)

    return masked


@_masking
def shorten(masked: str) -> str:
    """``text`` (Markdown) with every sentence over :data:`LONG` words broken at its
    best boundaries (:func:`_break`), each part a sentence of its own, until no break is
    left; code spans are never broken."""
    out = []
    for line in masked.split("\n"):
        parts = re.split(r"(?<=[.!?]) ", line)
        done = []
        while parts:
            part = parts.pop(0)
            if word_count(part) > LONG and (broken := _break(part)) != part:
                parts[:0] = re.split(r"(?<=\.) ", broken, maxsplit=1)
                continue
            done.append(part)
        out.append(" ".join(done))
    return "\n".join(out)


_ASIDE = re.compile(r"(?P<stop>\. )?\((?P<aside>[^()]+)\)")
AGAIN = "(as above)"
"""What an aside said before becomes."""


@_masking
def said_once(masked: str) -> str:
    """``text`` (Markdown) with each parenthetical aside of :data:`NGRAM` words or more
    that repeats the last such aside (case aside) said as "(as above)": "commit B reverted
    on its tip (one new commit made by `git revert` with its default message)" after an
    item that said so reads "commit B reverted on its tip (as above)".  An aside another
    long aside came between is said again in full, where "(as above)" would point at the
    wrong one.  An aside that a long phrase had made a sentence of its own ("... on top.
    (One new commit ...)") goes back into its sentence.  Code spans are never touched."""
    last = [""]

    def once(m: re.Match[str]) -> str:
        key = " ".join(m["aside"].lower().split())
        if word_count(m["aside"]) < NGRAM:
            return m.group(0)
        if key == last[0]:
            return f" {AGAIN}" if m["stop"] else AGAIN
        last[0] = key
        return m.group(0)

    return _ASIDE.sub(once, masked)


_NOTE = re.compile(r"(?<=[.!?] )\((?P<aside>[A-Z][^()]*)\)(?=\.)")
"""An aside that became a sentence of its own: "... on top. (One new commit ...)."."""


@_masking
def unbracketed(masked: str) -> str:
    """``text`` (Markdown) with each aside that is a sentence of its own said without its
    parentheses: "... on top. (One new commit keeping ...)." reads "... on top. One new
    commit keeping ...", not as a note left over.  Run after :func:`said_once`, which
    finds repeated asides by their parentheses.  Code spans are never touched."""
    return _NOTE.sub(lambda m: m["aside"], masked)


_STUTTER = re.compile(r"\b([a-z]+) \1 (?=[A-Z]\b)")
_STUTTER_THAT = re.compile(r"\b([a-z]+) that \1\b(?! [A-Z]\b)")


def without_stutter(text: str) -> str:
    """``text`` with an entry named by a letter or by "that" not said after its own noun:
    the wording "for team {{ team }}" reads "for team A" and "for that team", not "for team
    team A" or "for team that team".  Code spans are never touched."""
    def plain(part: str) -> str:
        return _STUTTER_THAT.sub(r"that \1", _STUTTER.sub(r"\1 ", part))

    out, at = [], 0
    for m in _SPAN.finditer(text):
        out += [plain(text[at:m.start()]), m.group(0)]
        at = m.end()
    return "".join([*out, plain(text[at:])])

