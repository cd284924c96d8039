"""Instructions: text derived from the executed trace, in goal or step style.

Each tool's ``intent`` (a jinja2 noun phrase) describes what a step produced; every value
it interpolates renders as a Markdown code span, so every literal of an instruction is a
code span.  A **goal**-style instruction lists every output the verifier checks, with the
literals it needs, and never the commands; a **step**-style one lists the same items as
ordered steps.  The wording varies with the candidate seed: the opener (drawn from pools
that fit the executed graph's structure), the item layout, the answer format phrasing,
the closer and the context label come from ``templates/instruction_phrases.yaml``, and
the ids of the variants drawn form the instruction's ``template_id``.

Templates are compiled once per process; rendering is pure Python.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2
import yaml

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec
from schemas.graph import WorkflowGraph
from schemas.records import InstructionStyle
from schemas.trace import Trace

TEMPLATES = Path(__file__).parent / "templates"
PHRASES: dict = yaml.safe_load((TEMPLATES / "instruction_phrases.yaml").read_text())
STYLES = ("goal", "step")

_INTENT = jinja2.Environment(finalize=lambda v: f"`{v}`", autoescape=False,
                             undefined=jinja2.StrictUndefined)
_PAGE = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False,
                           undefined=jinja2.StrictUndefined, trim_blocks=True,
                           ).get_template("instruction.md.j2")
_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve"]


@lru_cache(maxsize=4096)
def _template(source: str) -> jinja2.Template:
    return _INTENT.from_string(source)


def render_phrase(source: str, args: dict[str, str]) -> str:
    """A tool's jinja2 ``intent`` or ``label`` with every value as a code span."""
    return _template(source).render(**args)


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


@dataclass(frozen=True)
class Instruction:
    text: str
    style: InstructionStyle
    template_id: str
    items: tuple[Item, ...]


def _changes_in_place(tool: ToolSpec) -> bool:
    if tool.effect != "write" or tool.creates or not tool.returns.from_param:
        return False
    return tool.param(tool.returns.from_param).fresh is None


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


def answer_format(parser: str, rng: random.Random) -> str:
    formats = PHRASES["answer_formats"]
    return rng.choice(formats.get(parser, formats["other"]))


def instruction_items(eco: Ecosystem, trace: Trace, rng: random.Random) -> list[Item]:
    """Every write step's output, then the answer of a final read step.  A value an
    earlier lookup printed is explained where a later step uses it."""
    items = []
    observed: dict[str, str] = {}
    for i, st in enumerate(trace.steps):
        tool = eco.spec.tool(st.tool)
        phrase = render_phrase(tool.intent, st.args)
        notes = [f"`{v}` is {observed[v]}" for v in dict.fromkeys(st.args.values())
                 if v in observed]
        text = phrase + (f" ({'; '.join(notes)})" if notes else "")
        if tool.effect == "write":
            label = tool.returns.label or "{{ " + str(tool.returns.from_param) + " }}"
            items.append(Item(render_phrase(label, st.args), text, i, phrase=phrase,
                              in_place=_changes_in_place(tool)))
        elif i == len(trace.steps) - 1 and trace.answer is not None:
            fmt = answer_format(tool.returns.parser, rng)
            items.append(Item(f"`{eco.spec.answer_file}`", f"{text}, {fmt}", i, answer=True,
                              phrase=phrase))
        else:
            observed[str(st.output)] = phrase
    return items


def _pick(rng: random.Random, pool: dict[str, str]) -> tuple[str, str]:
    key = rng.choice(sorted(pool))
    return key, pool[key]


def _opener_pool(style: str, shape: str, items: list[Item]) -> dict[str, str]:
    openers = PHRASES[style]["openers"]
    pool = dict(openers["any"])
    if style == "goal":
        if len(items) >= 2:
            pool.update(openers["several"])
        pool.update(openers.get(shape, {}))
        if len(items) == 1 and items[0].answer:
            pool.update(openers["answer_only"])
    return pool


def render_instruction(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int,
                       style: InstructionStyle = "goal") -> Instruction:
    """The instruction for a validated trace; the same seed gives the same text."""
    if style not in STYLES:
        raise ValueError(f"unknown instruction style {style!r}; use one of {STYLES}")
    rng = random.Random(f"instruction:{style}:{eco.name}:{seed}:{graph.fingerprint()}")
    phrases = PHRASES[style]
    items = instruction_items(eco, trace, rng)
    opener_id, opener = _pick(rng, _opener_pool(style, structure(graph, trace), items))
    opener = opener.format(n=_NUMBERS[len(items)] if len(items) < len(_NUMBERS)
                           else len(items))
    layout_id, layout = _pick(rng, phrases["layouts"])
    closer_id, closer = _pick(rng, phrases["closers"])
    verbs = phrases.get("verbs", {})
    lines = []
    for n, item in enumerate(items, start=1):
        kind = "answer" if item.answer else "update" if item.in_place else "create"
        verb = rng.choice(verbs[kind]) if verbs else ""
        lines.append(layout.format(i=n, verb=verb, target=item.target, text=item.text))
    paragraphs = []
    context = eco.spec.context.strip()
    if context:
        paragraphs.append(_pick(rng, PHRASES["goal"]["context_labels"])[1] + context)
    if style == "goal" and any(_changes_in_place(eco.spec.tool(st.tool))
                               for st in trace.steps[:-1]):
        paragraphs.append(_pick(rng, phrases["order_notes"])[1])
    text = _PAGE.render(opener=opener, lines=lines, paragraphs=paragraphs, closer=closer)
    return Instruction(text=text.strip() + "\n", style=style,
                       template_id=f"{style}/{layout_id}/{opener_id}/{closer_id}",
                       items=tuple(items))
