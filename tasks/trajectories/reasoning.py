"""Reasoning annotations: for each assistant turn, why this call, from what is visible.

The template reasoner writes one short paragraph per turn from what the agent can see at
that point: for a discovery, what it looks at; for a step, the instruction item the call
produces, the names it uses that its discoveries showed (quoted from their output), the
earlier calls whose results it consumes, and for the answer the observation just
returned — never a later result.
Values it quotes are code spans taken from the instruction or an earlier observation, so
the grounding check (:mod:`tasks.rules.grounding`) applies to reasoning as well.

An optional LLM reasoner (:class:`LLMReasoner`) rewrites each turn's reasoning from the
visible conversation prefix only; a reply that quotes anything not visible is rejected
(counted on the client) and the template text is kept.
"""

from __future__ import annotations

import json
import logging
import random
import re
import shlex
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.records import Message
from schemas.trace import DiscoveryTrace, Observation, StepTrace, Trace
from tasks.core.llm import LLMClient, LLMError
from tasks.instruct.instruction import Item
from tasks.rules.grounding import Visible, appears
from tasks.rules.shell_names import command_names, routes

log = logging.getLogger(__name__)
PURPOSE = "reasoning"
SHORT_ANSWER = 60

_FIRST = ["I start with", "First comes", "To begin, I produce", "The first item is"]
_NEXT = ["Next is", "Now for", "The next item is", "I still need", "Then comes"]
_FUNCTION = ["The `{tool}` tool does exactly this.", "`{tool}` produces this in one call.",
             "I call `{tool}` for it."]
_TERMINAL = ["One shell command does it, with {programs}.", "I run it with {programs}.",
             "{Programs} can do this in one command."]
_LOOK = ["Before I rely on it, I look at {label}.", "First I check {label}.",
         "I need {label} before going on.", "I read {label} so I use only what it shows."]
_DOC_SPAN = re.compile(r"``([^`\n]+)``")
_READ = ["To answer, I need {text}.", "The question asks for {text}.",
         "What remains is the answer: {text}."]
_FROM_FILE = "It starts from {values}, which an earlier call created."
_FROM_PRINT = "It uses {values}, printed by an earlier call."
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PROGRAM_NAME = re.compile(r"^[a-z][a-z0-9_.+-]*$")
_SEPARATORS = {"&&", "||", "|", ";", "(", ")", "<(", ">(", "&", "{", "}", "then", "do", "if",
               "else"}
_NOT_PROGRAMS = {"if", "then", "fi", "else", "do", "done", "echo", "exit", "test", "true"}


def programs(command: str) -> list[str]:
    """The programs a shell command runs, in order (``LC_ALL=C sort`` -> ``sort``); quoted
    text (an awk or python program) is never mistaken for a command."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    seen: list[str] = []
    expect = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: say nothing rather than guess
        return seen
    for token in tokens:
        if token in _SEPARATORS:
            expect = True
        elif expect and _ASSIGNMENT.match(token):
            continue
        elif expect:
            if _PROGRAM_NAME.match(token) and token not in _NOT_PROGRAMS and token not in seen:
                seen.append(token)
            expect = False
    return seen


def _spoken(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _discovery_text(eco: Ecosystem, d: DiscoveryTrace, action_space: str,
                    rng: random.Random) -> str:
    spec = eco.spec.discovery_tool(d.name)
    lead = rng.choice(_LOOK).format(label=spec.label)
    if action_space == "function":
        return f"{lead} `{spec.name}` shows it."
    return f"{lead} {rng.choice(_TERMINAL).format(**_program_words(d.command))}"


def _program_words(command: str) -> dict[str, str]:
    names = _spoken(programs(command) or ["bash"])
    return {"programs": names, "Programs": names[:1].upper() + names[1:]}


def _documented(st: StepTrace, label: str, text: str) -> str | None:
    """"<label> documents `<entry>`": the shortest code span of a discovery's output that
    names every fixed segment of the route the step calls (``PUT /tickets/<id>/status``)."""
    for route in routes(st.command):
        fixed = [seg for seg in route if not seg.isdigit() and seg not in st.args.values()]
        spans = [span for span in _DOC_SPAN.findall(text)
                 if fixed and all(appears(seg, [span]) for seg in fixed)]
        if spans:
            return f"{label[:1].upper() + label[1:]} documents `{min(spans, key=len)}`."
    return None


def _cited(eco: Ecosystem, st: StepTrace, action_space: str,
           shown: Callable[[Observation], str]) -> str | None:
    """One sentence quoting what this step's discoveries showed that it uses: the API
    entry of the route it calls, else up to three of its names."""
    for d in st.discoveries:
        documented = _documented(st, eco.spec.discovery_tool(d.name).label, shown(d.observation))
        if documented:
            return documented
    used = list(st.args.values())
    if action_space != "function":
        used = command_names(st.command) + used
    for d in st.discoveries:
        text = shown(d.observation)
        found = [v for v in dict.fromkeys(used) if len(v) > 1 and "`" not in v
                 and "\n" not in v and appears(v, [text])][:3]
        if found:
            label = eco.spec.discovery_tool(d.name).label
            return f"{label[:1].upper() + label[1:]} shows {_spoken([f'`{v}`' for v in found])}."
    return None


def _step_text(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, i: int, item: Item | None,
               action_space: str, rng: random.Random,
               shown: Callable[[Observation], str]) -> str:
    st = trace.steps[i]
    tool = eco.spec.tool(st.tool)
    parts = []
    if item is None or item.answer:
        text = item.phrase if item else tool.description.rstrip(".")
        parts.append(rng.choice(_READ).format(text=text))
    else:
        lead = rng.choice(_FIRST if i == 0 else _NEXT)
        parts.append(f"{lead} {item.target}: {item.text}.")
    cited = _cited(eco, st, action_space, shown)
    if cited:
        parts.append(cited)
    index = {s.step_id: k for k, s in enumerate(trace.steps)}
    printed: list[str] = []
    named: list[str] = []
    binds = {s.id: s.bind for s in graph.steps}
    for name, b in binds.get(st.step_id, {}).items():
        if b.kind == "step" and b.step in index:
            up = eco.spec.tool(trace.steps[index[b.step]].tool)
            (named if up.returns.parser == "file" else printed).append(f"`{st.args[name]}`")
    if printed:
        parts.append(_FROM_PRINT.format(values=_spoken(printed)))
    elif named and i > 0:
        parts.append(_FROM_FILE.format(values=_spoken(named)))
    if action_space == "function":
        parts.append(rng.choice(_FUNCTION).format(tool=tool.name))
    else:
        parts.append(rng.choice(_TERMINAL).format(**_program_words(st.command)))
    return " ".join(parts)


def template_reasoning(eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                       items: Sequence[Item], action_space: str, seed: int,
                       shown: Callable[[Observation], str]) -> list[str]:
    """One reasoning text per assistant turn: each step's discoveries and the step (which
    quotes what they showed, as ``shown`` renders an observation), the answer write
    (answer-ending tasks only) and the final message."""
    rng = random.Random(f"reasoning:{action_space}:{eco.name}:{seed}")
    by_step = {item.step: item for item in items}
    out = []
    for i, st in enumerate(trace.steps):
        out += [_discovery_text(eco, d, action_space, rng) for d in st.discoveries]
        out.append(_step_text(eco, graph, trace, i, by_step.get(i), action_space, rng, shown))
    answer_file = f"`{eco.spec.answer_file}`"
    if trace.answer is not None:
        shown_answer = (f"`{trace.answer}`" if len(trace.answer) <= SHORT_ANSWER
                        and "\n" not in trace.answer and "`" not in trace.answer
                        else "the output above")
        how = "with `write_answer`" if action_space == "function" else "with printf"
        out.append(f"The result is {shown_answer}; I save it to {answer_file} {how}.")
        out.append(f"The answer is in {answer_file} and every call succeeded, so the task "
                   "is complete.")
    else:
        out.append("Every listed output has been produced and each call succeeded, so the "
                   "task is complete.")
    return out


def final_answer(eco: Ecosystem, trace: Trace, items: Sequence[Item], seed: int) -> str:
    """The closing assistant message: what was done, naming only visible literals."""
    rng = random.Random(f"final:{eco.name}:{seed}")
    if trace.answer is not None:
        short = len(trace.answer) <= SHORT_ANSWER and "\n" not in trace.answer \
            and "`" not in trace.answer
        what = f"The answer is `{trace.answer}`" if short else "The answer is written"
        return f"{what}; it is saved in `{eco.spec.answer_file}`."
    targets = []
    for item in items:
        if item.target not in targets:
            targets.append(item.target)
    listed = _spoken(targets)
    return rng.choice([f"Done: {listed} are in place." if len(targets) > 1
                       else f"Done: {listed} is in place.",
                       f"Finished. I produced {listed} as requested.",
                       f"All requested changes are made ({listed})."])


class Reasoning(BaseModel, extra="forbid"):
    reasoning: str = Field(min_length=1, max_length=2000)


SYSTEM_PROMPT = """\
You annotate one step of a recorded agent trajectory. You get the conversation so far
(what the agent could see) and the tool call the agent makes next. Write the agent's
reasoning for that call in one to three sentences, first person: why this call is the
right next step. Use only what the conversation shows; never guess a result that has not
been returned yet. Put any literal value (paths, names, numbers) in backticks, exactly as
it appears in the conversation."""


class LLMReasoner:
    """Per-turn reasoning from an LLM, kept only when everything it quotes is visible."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.model = client.config.model

    def __call__(self, prefix: Sequence[Message], tools: list[dict], call: dict | None,
                 default: str) -> str:
        view = [m.model_dump(include={"role", "content", "tool_calls", "name"},
                             exclude_none=True) for m in prefix]
        payload = json.dumps({"conversation": view, "next_call": call}, sort_keys=True)
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": payload}]
        try:
            reply = self.client.complete_json(messages, Reasoning, purpose=PURPOSE)
        except LLMError as exc:
            log.info("llm reasoning unavailable: %s", exc)
            return default
        seen = Visible(tools)
        for m in prefix:
            seen.see(m)
        unseen = seen.first_unseen_quote(reply.reasoning)
        if unseen is not None:
            self.client.record_rejected(PURPOSE)
            log.info("llm reasoning rejected: it quotes `%s`, which nothing showed", unseen)
            return default
        return reply.reasoning.strip()
