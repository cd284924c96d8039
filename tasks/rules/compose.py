"""Phrases of instructions: a tool's jinja2 ``intent`` (or ``label``) rendered with its
arguments, every value as a Markdown code span — and, for goal-level instructions,
composed.

Composition names a consumed result by what it is instead of where it was put: when a
step's phrase is rendered, an argument bound to an earlier step that is not listed (an
intermediate write, or a read's value; see :mod:`tasks.rules.deliverables`) renders as that
step's own composed phrase, recursively — "the first `5` lines of the distinct lines of
`logs/app.log`, sorted …" rather than the intermediate file's name, "the open ticket with
the most comments" rather than the id a lookup returned.  An argument bound to a listed
step stays its value (the instruction names that entry).  A composed in-place change is
named as the entry it changes followed by ``(after: <change>; then <change>)``, unless
its intent already names the entry.  Two rules keep nested phrases readable: a noun that
only announces a value (``ticket`` in "subtask of ticket {{ ticket }}", when the
consumed step's label starts with it or the composed phrase names it: "the open ticket
with the most comments") is dropped before a composed value, and a new
entry is named by its intent up to the first ``": "`` when only fixed wording (its
defaults) follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

import jinja2

from schemas.ecosystem import EcosystemSpec, ToolSpec
from schemas.trace import Trace
from tasks.rules.deliverables import Flow, changes_in_place, names_own_entry
from tasks.rules.discourse import Discourse


class Composed(str):
    """Text that is already a phrase: rendered as it is, not as a code span."""


_INTENT = jinja2.Environment(
    finalize=lambda v: v if isinstance(v, Composed) else f"`{v}`", autoescape=False,
    undefined=jinja2.StrictUndefined)


@lru_cache(maxsize=4096)
def _template(source: str) -> jinja2.Template:
    return _INTENT.from_string(source)


def render_phrase(source: str, args: dict[str, str]) -> str:
    """A tool's jinja2 ``intent`` or ``label`` with every value as a code span (a
    :class:`Composed` value as it is)."""
    return _template(source).render(**args)


_LEAD = re.compile(r"^(\w+) \{\{")
_CLAUSE = ": "


def _without_nouns(source: str, nouns: dict[str, str]) -> str:
    """``source`` without the noun before each composed ``{{ param }}`` (param -> noun)."""
    for param, noun in nouns.items():
        source = re.sub(rf"\b{re.escape(noun)} (\{{\{{\s*{re.escape(param)}\s*\}}\}})",
                        r"\1", source)
    return source


_FUNCTION_WORDS = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "its", "of",
    "on", "or", "over", "than", "that", "the", "to", "under", "whose", "with",
})


_ARTICLES = frozenset({"a", "an", "the"})


def _noun_before(source: str, param: str) -> str | None:
    """The noun that only announces ``{{ param }}`` in ``source`` (``ticket`` in "of ticket
    {{ ticket }}"), if any: not a function word, and not the head of a clause an article
    opens ("the commit {{ ref }} points to" needs its noun whatever ``ref`` is)."""
    m = re.search(rf"(?:(\w+) )?(\w+) \{{\{{\s*{re.escape(param)}\s*\}}\}}", source)
    if m is None or m.group(2).lower() in _FUNCTION_WORDS \
            or (m.group(1) or "").lower() in _ARTICLES:
        return None
    return m.group(2)


class Composer:
    """Phrases of one trace's steps; with ``compose`` False every value is literal (the
    ``spec`` and ``step`` styles)."""

    def __init__(self, spec: EcosystemSpec, trace: Trace, flow: Flow, compose: bool,
                 described: Mapping[str, str] | None = None, discourse: bool = False) -> None:
        self.spec, self.trace, self.flow, self.compose = spec, trace, flow, compose
        self.described = dict(described or {})
        """Literal -> the description that replaces it (``tasks.instruct.describe``)."""
        self.discourse = Discourse(self) if discourse and compose else None
        """With ``discourse``, a composed result is introduced by a sentence of its own and
        named by a short reference wherever it is used (:class:`Discourse`)."""

    def _tool(self, i: int) -> ToolSpec:
        return self.spec.tool(self.trace.steps[i].tool)

    def tool(self, i: int) -> ToolSpec:
        """The tool of trace step ``i``."""
        return self._tool(i)

    def folded(self, i: int) -> dict[str, int]:
        """Inputs of step ``i`` named by what an earlier step made (input -> that step)."""
        return self._folded(i)

    def _folded(self, i: int) -> dict[str, int]:
        """Inputs of step ``i`` rendered as an earlier step's phrase: those bound to an
        unlisted step, and those bound to a listed one whose own entry is named by a
        phrase (a looked-up ticket changed twice)."""
        if not self.compose:
            return {}
        return {n: u for n, u in self.flow.ups[i].items()
                if u not in self.flow.listed or self._named_by_phrase(u)}

    def _named_by_phrase(self, i: int) -> bool:
        return str(self._tool(i).returns.from_param) in self._folded(i)

    def _name(self, u: int) -> str:
        """How a consumer names step ``u``'s result: a listed entry by its label (its
        change is a line of its own), anything else by what it is (in a discourse, by a
        reference to the sentence that introduced it)."""
        if u in self.flow.listed:
            return self.label(u)
        return self.discourse.refer(u) if self.discourse else self.ref(u)

    def _literal_args(self, i: int) -> dict[str, str]:
        """Step ``i``'s arguments as written, a described literal as its description (in a
        discourse, its short name after one sentence has defined it)."""
        return {name: Composed(self._described(v)) if v in self.described else v
                for name, v in self.trace.steps[i].args.items()}

    def _described(self, literal: str) -> str:
        return self.discourse.define(literal) if self.discourse else self.described[literal]

    def args(self, i: int) -> dict[str, str]:
        """Step ``i``'s arguments, those bound to a folded step as its phrase."""
        args = self._literal_args(i)
        for name, u in self._folded(i).items():
            args[name] = Composed(self._name(u))
        return args

    def _render(self, i: int, source: str) -> str:
        nouns = {}
        args = self.args(i)
        folded = self._folded(i)
        for name in [n for n, v in args.items() if isinstance(v, Composed)]:
            label = self._tool(folded[name]).returns.label or "" if name in folded else ""
            if (lead := _LEAD.match(label)) is not None:
                nouns[name] = lead.group(1)
            elif (before := _noun_before(source, name)) and re.search(
                    rf"\b{re.escape(before)}\b", args[name], re.IGNORECASE):
                nouns[name] = before
        return render_phrase(_without_nouns(source, nouns), args)

    def phrase(self, i: int) -> str:
        """Step ``i``'s intent, composed.  The intent of a step that creates a record sees
        ``later``: the fields later steps of the task change on that record (its
        ``returns.changes``), so it leaves out the defaults they replace ("no assignee"
        for a ticket an item below assigns)."""
        later = self._later_changes(i)
        if later:
            return _template(self._tool(i).intent).render(**self.args(i), later=later)
        return self._render(i, self._tool(i).intent)

    def _later_changes(self, i: int) -> frozenset[str]:
        tool = self._tool(i)
        if not tool.creates or not tool.returns.from_param:
            return frozenset()
        key = self.trace.steps[i].args.get(tool.returns.from_param)
        fields: set[str] = set()
        for st in self.trace.steps[i + 1:]:
            later = self.spec.tool(st.tool)
            if later.returns.changes and st.args.get(later.returns.from_param or "") == key:
                fields.update(later.returns.changes)
        return frozenset(fields)

    def label(self, i: int) -> str:
        """What step ``i`` writes, as instructions name it: its ``label`` (default: its
        key); an entry a composed step singles out (a looked-up ticket) is that step's
        phrase."""
        tool = self._tool(i)
        up = self._folded(i).get(str(tool.returns.from_param))
        if up is not None:
            return self._name(up)
        source = tool.returns.label or "{{ " + str(tool.returns.from_param) + " }}"
        return self._render(i, source)

    def ref(self, i: int) -> str:
        """Step ``i``'s result, named by what it is (a lookup: by its ``label``, the thing
        it singles out, when it has one)."""
        tool = self._tool(i)
        if tool.effect == "read" and tool.returns.label:
            return self._render(i, tool.returns.label)
        head, colon, tail = tool.intent.partition(_CLAUSE)
        if tool.effect == "write" and not changes_in_place(tool) and colon \
                and "{{" not in tail:
            return self._render(i, head)
        if not changes_in_place(tool) or names_own_entry(tool):
            return self.phrase(i)
        entry, changes = self._changes(i)
        return f"{entry} (after: {'; then '.join(changes)})"

    def _changes(self, i: int) -> tuple[str, list[str]]:
        tool = self._tool(i)
        up = self._folded(i).get(str(tool.returns.from_param))
        if up is None:
            return self.label(i), [self.phrase(i)]
        up_tool = self._tool(up)
        if changes_in_place(up_tool) and not names_own_entry(up_tool):
            entry, changes = self._changes(up)
            return entry, [*changes, self.phrase(i)]
        return self.ref(up), [self.phrase(i)]

    def own_text(self, i: int) -> str:
        """Step ``i``'s own words: its label and intent with every composed input left
        out, so a literal found there is the step's own, not one a nested phrase carries."""
        tool = self._tool(i)
        args = self._literal_args(i)
        args.update({name: Composed("...") for name in self._folded(i)})
        sources = [tool.intent]
        if tool.returns.label or tool.returns.from_param:
            sources.insert(0, tool.returns.label or "{{ " + str(tool.returns.from_param) + " }}")
        return " ".join(render_phrase(source, args) for source in sources)

    def steps(self, i: int) -> tuple[int, ...]:
        """Step ``i`` and every step whose phrase its own phrase includes, in trace order
        (in a discourse, step ``i`` alone: the others have sentences of their own)."""
        if self.discourse:
            return (i,)
        seen = {i}
        for u in self._folded(i).values():
            seen.update(self._named_steps(u))
        return tuple(sorted(seen))

    def _named_steps(self, u: int) -> tuple[int, ...]:
        """The steps whose words name step ``u``'s result where a consumer uses it: a
        listed entry's label names only the lookup that singled it out (its changes are
        lines of their own); anything else is named by its whole phrase."""
        if u not in self.flow.listed:
            return self.steps(u)
        up = self._folded(u).get(str(self._tool(u).returns.from_param))
        return () if up is None else self._named_steps(up)
