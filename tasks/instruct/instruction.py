"""Instructions: text derived from the executed trace, in goal, spec or step style.

Each tool's ``intent`` (a jinja2 noun phrase) describes what a step produced; every value
it interpolates renders as a Markdown code span, so every literal of an instruction is a
code span (:mod:`tasks.rules.compose`).

- **goal** (the default) states the deliverables only: the listed write steps (those
  whose entry no later step consumes, see :mod:`tasks.rules.deliverables`) and the answer with
  its format.  Each is described by composing intents: an input bound to an intermediate
  result or an observed value is named by what it is, not by its name or value, so the
  solver has to work out how to get there.  What it cannot discover stays literal.
- **spec** lists every output the verifier checks, intermediates included, with every
  literal it needs, and never the commands (byte for byte the goal style before goal
  instructions became goal-level);
- **step** lists the same items as spec as ordered steps.

A fix task's instruction opens with its fault's ``symptom``: the defect as a user reports
it, never the fix (the repair step's own line states the goal).  A graph planned in a
scenario opens with one of the scenario's ``motivations`` (before the symptom): why the
work is done.  The closer promises what the verifier guards: that existing entries stay as
they are (``unchanged`` checks) and, for an ecosystem with shared probe sections, its
``shared_note`` (``only`` checks: nothing added there that was not asked for).

The wording varies with the candidate seed: the opener (drawn from pools that fit the
items, and for spec the executed graph's structure), the item layout, the answer format
phrasing, the closer and the context label come from ``templates/instruction_phrases.yaml``,
and the ids of the variants drawn form the instruction's ``template_id``.

Templates are compiled once per process; rendering is pure Python.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.records import InstructionStyle
from schemas.trace import Trace
from schemas.verifier import Check
from schemas.yaml_text import load_yaml
from tasks.instruct.preserve import ANSWER_ESSENTIALS, DEFAULT_ESSENTIAL
from tasks.rules.compose import Composer, render_phrase
from tasks.rules.deliverables import changes_in_place, flow
from tasks.rules.discourse import (
    Sentence,
    said_once,
    shorten,
    unbracketed,
    without_stutter,
)

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
PHRASES: dict = load_yaml((TEMPLATES / "instruction_phrases.yaml").read_text())
STYLES: tuple[InstructionStyle, ...] = ("goal", "spec", "step")
DEFAULT_STYLE: InstructionStyle = "goal"
_RNG_NAMES = {"goal": "deliverables", "spec": "goal", "step": "step"}
"""The name each style's wording draws are seeded with (``spec`` keeps the one it had when
it was called goal, so its text is unchanged)."""

_JINJA = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False,
                            undefined=jinja2.StrictUndefined, trim_blocks=True)
_PAGE = _JINJA.get_template("instruction.md.j2")
_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve"]

__all__ = ["STYLES", "Instruction", "Item", "render_instruction", "render_phrase"]


@dataclass(frozen=True)
class Item:
    """One thing the instruction asks for: where it goes and what it must hold."""

    target: str
    text: str
    step: int
    """Index of the trace step that produces it."""
    answer: bool = False
    phrase: str = ""
    """The rendered intent alone (``text`` minus an answer's format)."""
    in_place: bool = False
    """The step changes an existing entry rather than creating one."""
    steps: tuple[int, ...] = ()
    """Every trace step the line describes: ``step`` and the steps composed into it
    (empty: ``step`` alone)."""
    own: tuple[str, ...] = ()
    """Per step of ``described``, its own words (``Composer.own_text``); empty: the
    whole line is each step's own."""

    @property
    def described(self) -> tuple[int, ...]:
        return self.steps or (self.step,)


@dataclass(frozen=True)
class Instruction:
    text: str
    style: InstructionStyle
    template_id: str
    items: tuple[Item, ...]
    sentences: tuple[Sentence, ...] = ()
    """Goal style: the sentences before the list that introduce what the items refer to
    (:mod:`tasks.rules.discourse`)."""

    @property
    def lines(self) -> tuple[Item | Sentence, ...]:
        """Every part that describes steps: the introducing sentences, then the items."""
        return (*self.sentences, *self.items)


def structure(graph: WorkflowGraph, trace: Trace) -> str:
    """How the executed steps connect: ``single``, ``chain`` (each step consumes the one
    before), ``branch`` (one output feeds several steps), ``join`` (a step combines several
    outputs), ``diamond`` (both), ``loose`` (no step consumes another) or ``mixed``."""
    ran = [st.step_id for st in trace.steps]
    if len(ran) == 1:
        return "single"
    steps = [s for s in graph.steps if s.id in set(ran)]
    uses: Counter[str] = Counter()
    joins = chained = 0
    for i, s in enumerate(steps):
        ups = {b.step for b in s.bind.values() if b.kind == "step" and b.step is not None}
        uses.update(ups)
        joins += len(ups) >= 2
        chained += i > 0 and steps[i - 1].id in ups
    branches = any(n >= 2 for n in uses.values())
    if branches and joins:
        return "diamond"
    if joins:
        return "join"
    if branches:
        return "branch"
    if chained == len(steps) - 1:
        return "chain"
    return "loose" if not uses else "mixed"


def answer_format(parser: str, rng: random.Random, intent: str = "") -> str:
    """A phrasing of the answer's format for ``parser``; empty when the tool's own
    ``intent`` already says it ("..., one per line in increasing order")."""
    formats = PHRASES["answer_formats"]
    # drawn either way, so that the rest of the instruction's draws do not depend on it
    fmt = rng.choice(formats.get(parser, formats["other"]))
    return "" if ANSWER_ESSENTIALS.get(parser, DEFAULT_ESSENTIAL) in intent else fmt


def instruction_items(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, rng: random.Random,
                      style: InstructionStyle = "spec", checks: Sequence[Check] = (),
                      described: Mapping[str, str] | None = None
                      ) -> tuple[list[Item], list[Sentence]]:
    """The write steps' outputs (goal: the listed ones, composed; else every one), then
    the answer of a final read step; a literal of ``described`` is written as its
    description.  Goal style: with the sentences that introduce what the items refer to.
    Outside goal style, a value an earlier lookup printed is explained where a later step
    uses it."""
    steps = flow(eco.spec, graph, trace, checks)
    goal = style == "goal"
    composer = Composer(eco.spec, trace, steps, compose=goal, described=described,
                        discourse=goal)
    items = []
    for i, st in enumerate(trace.steps):
        tool = eco.spec.tool(st.tool)
        phrase = composer.phrase(i)
        text = phrase if goal else phrase + _observed_note(composer, steps.ups[i])
        finish = composer.discourse.finish if composer.discourse else str
        if tool.effect == "write" and (not goal or i in steps.listed):
            target = composer.label(i)
            items.append(Item(target, finish(_without_target(target, text)) if goal else text, i,
                              phrase=phrase, in_place=changes_in_place(tool),
                              steps=composer.steps(i), own=_own(composer, i)))
        elif tool.effect != "write" and i == len(trace.steps) - 1 and trace.answer is not None:
            fmt = answer_format(tool.returns.parser, rng, tool.intent)
            answer = finish(f"{text}, {fmt}" if fmt else text)
            items.append(Item(f"`{eco.spec.answer_file}`", answer, i, answer=True,
                              phrase=phrase, steps=composer.steps(i), own=_own(composer, i)))
    return items, composer.discourse.sentences if composer.discourse else []


def _without_target(target: str, text: str) -> str:
    """``text`` without ``target`` repeated at its start: an entry changed in place and
    named by description reads "the deleted branch: back at ...", not "the deleted
    branch: the deleted branch back at ...", and one named by its literal reads "table
    `products`: with no negative `price` left", not "table `products`: `products` with no
    negative `price` left"."""
    literal = re.search(r"(`[^`]+`)$", target)
    for said in (target, literal.group(1) if literal else None):
        if said and text.startswith(said) and text[len(said):len(said) + 1] in (" ", ","):
            rest = text[len(said):].lstrip(" ,")
            if rest[:1].islower():
                return rest
    return text


def _observed_note(composer: Composer, ups: dict[str, int]) -> str:
    """`` (`12` is the id of ...)`` for each input bound to an earlier read's value (one
    written as its description is named by it already)."""
    notes: dict[str, str] = {}
    for u in ups.values():
        if composer.spec.tool(composer.trace.steps[u].tool).effect != "write" \
                and str(composer.trace.steps[u].output) not in composer.described:
            value = composer.trace.steps[u].output
            notes.setdefault(str(value), f"`{value}` is {composer.phrase(u)}")
    return f" ({'; '.join(notes.values())})" if notes else ""


def _own(composer: Composer, i: int) -> tuple[str, ...]:
    """Own words of each step line ``i`` describes (none when nothing is composed)."""
    steps = composer.steps(i)
    return tuple(composer.own_text(j) for j in steps) if len(steps) > 1 else ()


def _pick(rng: random.Random, pool: dict[str, str]) -> tuple[str, str]:
    key = rng.choice(sorted(pool))
    return key, pool[key]


def _opener_pool(style: str, shape: str, items: list[Item]) -> dict[str, str]:
    openers = PHRASES[style]["openers"]
    pool = dict(openers["any"])
    if style != "step":
        if len(items) >= 2:
            pool.update(openers["several"])
        pool.update(openers.get(shape, {}))
        if len(items) == 1 and items[0].answer:
            pool.update(openers["answer_only"])
    return pool


def _ordered(style: InstructionStyle, eco: Ecosystem, trace: Trace, items: list[Item]) -> bool:
    """Does the instruction need a note that its items apply in order?"""
    if style == "spec":
        return any(changes_in_place(eco.spec.tool(st.tool)) for st in trace.steps[:-1])
    return style == "goal" and any(item.in_place for item in items[:-1])


def _describes(eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
               checks: Sequence[Check]) -> bool:
    """Does a goal-level instruction name something by a lookup's description?"""
    ups = flow(eco.spec, graph, trace, checks).ups
    return any(eco.spec.tool(trace.steps[u].tool).effect == "read"
               for bound in ups for u in bound.values())


@lru_cache(maxsize=64)
def _context_template(source: str) -> jinja2.Template:
    return _JINJA.from_string(source)


def context_text(eco: Ecosystem, style: InstructionStyle) -> str:
    """The ecosystem's ``context`` as an instruction of ``style`` writes it: a jinja2
    template with ``style`` (so that, say, a goal-level task leaves the database file for
    the solver to find while the other styles name it)."""
    return _context_template(eco.spec.context).render(style=style).strip()


def _layout(rng: random.Random, layouts: dict[str, str], items: int) -> tuple[str, str]:
    """The list layout (id, format): drawn, but a list of one item is not numbered."""
    layout_id, layout = _pick(rng, layouts)
    if items == 1 and "{i}" in layout:
        unnumbered = sorted(k for k, v in layouts.items() if "{i}" not in v)
        if unnumbered:
            layout_id = unnumbered[0]
            layout = layouts[layout_id]
    return layout_id, layout


def _motivation(eco: Ecosystem, graph: WorkflowGraph, rng: random.Random) -> tuple[str, str]:
    """A build task's opening line and its template id: one of its scenario's motivations
    that the graph keeps (``("", "")`` for a fix task, whose symptom is its one opening,
    outside a scenario, or where no line fits, as in a graph planned before lines had
    ``needs``)."""
    if not graph.scenario or graph.fault:
        return "", ""
    scenario = eco.spec.scenario(graph.scenario)
    fitting = scenario.fitting({s.tool for s in graph.steps})
    if not fitting:
        return "", ""
    i = rng.choice(fitting)
    return scenario.motivations[i].text.strip(), f"/{graph.scenario}.m{i + 1}"


def render_instruction(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int,
                       style: InstructionStyle = DEFAULT_STYLE,
                       checks: Sequence[Check] = (),
                       described: Mapping[str, str] | None = None) -> Instruction:
    """The instruction for a validated trace whose verifier makes ``checks`` (they decide
    which intermediate entries a goal-level one must still name); in the goal style, a
    literal of ``described`` is written as its description (:mod:`tasks.instruct.describe`).  The
    same seed gives the same text."""
    if style not in STYLES:
        raise ValueError(f"unknown instruction style {style!r}; use one of {STYLES}")
    rng = random.Random(f"instruction:{_RNG_NAMES[style]}:{eco.name}:{seed}:"
                        f"{graph.fingerprint()}")
    phrases = PHRASES[style]
    items, sentences = instruction_items(eco, graph, trace, rng, style, checks,
                                         described or {})
    opener_id, opener = _pick(rng, _opener_pool(style, structure(graph, trace), items))
    opener = opener.format(n=_NUMBERS[len(items)] if len(items) < len(_NUMBERS)
                           else len(items))
    layout_id, layout = _layout(rng, phrases["layouts"], len(items))
    closer_id, closer = _pick(rng, phrases["closers"] if eco.spec.preserves_existing
                              else PHRASES["open_closers"])
    if eco.spec.shared_note.strip():  # what may not be added to shared state: `only` checks
        closer = f"{closer} {eco.spec.shared_note.strip()}"
    verbs = phrases.get("verbs", {})
    lines = []
    for n, item in enumerate(items, start=1):
        kind = "answer" if item.answer else "update" if item.in_place else "create"
        verb = rng.choice(verbs[kind]) if verbs else ""
        lines.append(layout.format(i=n, verb=verb, target=item.target, text=item.text))
    paragraphs = []
    context = context_text(eco, style)
    if context:
        paragraphs.append(_pick(rng, PHRASES["context_labels"])[1] + context)
    ordered = _ordered(style, eco, trace, items)
    looked_up = style == "goal" and bool(described or _describes(eco, graph, trace, checks))
    if ordered and looked_up:  # one rule: two notes side by side read as contradicting
        paragraphs.append(_pick(rng, phrases["order_lookup_notes"])[1])
    elif ordered:
        paragraphs.append(_pick(rng, phrases["order_notes"])[1])
    elif looked_up:
        paragraphs.append(_pick(rng, phrases["lookup_notes"])[1])
    report, report_id = "", ""
    if graph.fault:
        report_id, label = _pick(rng, PHRASES["report_labels"])
        report = label + eco.spec.fault(graph.fault).symptom.strip()
        report_id = "/" + report_id
    motivation, motivation_id = _motivation(eco, graph, rng)
    text = _PAGE.render(motivation=motivation, report=report, opener=opener, lines=lines,
                        paragraphs=paragraphs, closer=closer,
                        setup=" ".join(s.text for s in sentences))
    if style == "goal":
        text = unbracketed(said_once(shorten(without_stutter(text))))
    return Instruction(text=text.strip() + "\n", style=style,
                       template_id=f"{style}/{layout_id}/{opener_id}/{closer_id}{report_id}"
                                   f"{motivation_id}",
                       items=tuple(items), sentences=tuple(sentences))
