"""Preservation: the literals an instruction must carry, derived from the trace and checks.

An instruction is only useful if a solver can reach the verified state from it, so it
must name every input the solver cannot discover and every output the verifier reads.
The required set is derived mechanically:

- every argument of every executed step that is not bound to an upstream step's output
  (sampled values, state paths, fresh output names, planner literals) — except, in the
  goal style, the ``fresh`` name of a new entry an intermediate step creates
  (:mod:`tasks.rules.deliverables`): the solver names its own intermediate results, and the
  verifier does not read them;
- the key of every state check the verifier makes on a declared output — every changed
  entry of a ``strict`` probe section, plus entries a write step names in the others
  (side effects in non-strict sections, such as git's new commit ids, are not names a
  solver chooses);
- the answer file, for tasks that end in an answer.

Each of these must appear as the whole content of a Markdown code span (the contract the
validation gate relies on when it extracts the instruction's literals).  The answer's
format must also survive: ``ANSWER_ESSENTIALS`` names the wording every phrasing of a
format keeps (case-insensitive).

A template instruction is also checked item by item: the own literals of each step a line
describes (its step, and in the goal style every step composed into it) must be in that
line (or in the ecosystem's context), so a literal that happens to appear elsewhere cannot
stand in for one an intent forgot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from schemas.ecosystem import EcosystemSpec
from schemas.graph import WorkflowGraph
from schemas.records import InstructionStyle
from schemas.trace import Trace
from schemas.verifier import GUARDS, Check
from tasks.core.failures import StageFailure
from tasks.rules.deliverables import flow
from tasks.rules.markdown import code_spans

ANSWER_ESSENTIALS: dict[str, str] = {"int": "integer", "number": "number", "text": "one line",
                                     "lines": "per line", "json": "JSON"}
"""Per answer parser, the words every phrasing of the answer format must contain."""
DEFAULT_ESSENTIAL = "one line"

@dataclass(frozen=True)
class Required:
    """What an instruction must hold: literals as code spans, and format wording."""

    spans: tuple[str, ...]
    phrases: tuple[str, ...] = ()
    by_step: tuple[tuple[str, ...], ...] = ()
    """Per trace step, the literals of its own arguments (not bound to a step)."""


class DescribedStep(Protocol):
    """An instruction line: what step ``step`` produces (``tasks.instruct.instruction.Item``)."""

    @property
    def target(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def step(self) -> int: ...
    @property
    def described(self) -> tuple[int, ...]:
        """Every trace step the line describes."""

    @property
    def own(self) -> tuple[str, ...]:
        """Per described step, its own words; empty when the line is each step's own."""


def answer_essential(spec: EcosystemSpec, trace: Trace) -> str | None:
    """The format wording an answer-ending task's instruction must keep (else ``None``)."""
    if trace.answer is None:
        return None
    parser = spec.tool(trace.steps[-1].tool).returns.parser
    return ANSWER_ESSENTIALS.get(parser, DEFAULT_ESSENTIAL)


def required_literals(spec: EcosystemSpec, graph: WorkflowGraph, trace: Trace,
                      checks: list[Check], style: InstructionStyle = "spec",
                      described: Mapping[str, str] | None = None) -> Required:
    """Everything the instruction for ``trace`` in ``style`` must name (see the module
    docstring); a literal of ``described`` is replaced by the value its description
    writes (literal -> that value)."""
    shown = dict(described or {}) if style == "goal" else {}
    binds = {s.id: s.bind for s in graph.steps}
    steps = flow(spec, graph, trace, checks)
    hidden = steps.intermediate if style == "goal" else frozenset()
    looked_up = {str(trace.steps[u].output) for ups in steps.ups for u in ups.values()
                 if spec.tool(trace.steps[u].tool).effect == "read"} if style == "goal" else set()
    spans: list[str] = []

    def add(value: object) -> None:
        text = shown.get(str(value), str(value))
        if text and text not in spans:
            spans.append(text)

    produced = set()
    by_step = []
    for i, st in enumerate(trace.steps):
        tool = spec.tool(st.tool)
        own = []
        for name, value in st.args.items():
            binding = binds.get(st.step_id, {}).get(name)
            if i in hidden and tool.names_new_entry(name):
                continue
            if (binding is None or binding.kind != "step") and str(value):
                add(value)
                own.append(shown.get(str(value), str(value)))
        by_step.append(tuple(own))
        if tool.effect == "write" and tool.returns.from_param:
            produced.add(st.args[tool.returns.from_param])
    for c in checks:
        if c.kind in GUARDS:
            continue  # promised by the closer, not by a literal
        if c.kind == "answer":
            add(c.key)
            continue
        section = spec.probe_sections.get(c.section)
        if c.key in looked_up:
            continue  # named by the lookup's phrase; the solver finds it
        if section is None or section.strict or c.key in produced:
            add(c.key)
    essential = answer_essential(spec, trace)
    return Required(spans=tuple(spans), phrases=(essential,) if essential else (),
                    by_step=tuple(by_step))


def missing_literals(text: str, required: Required) -> list[str]:
    """What ``text`` lacks: literals not found as a whole code span, then format wording."""
    present = set(code_spans(text))
    missing = [f"`{s}`" for s in required.spans if s not in present]
    lowered = text.lower()
    missing += [f"the words {p!r}" for p in required.phrases if p.lower() not in lowered]
    return missing


def check_preserved(text: str, required: Required) -> None:
    """Raise ``instruct/not_preserved`` naming the first missing literal, if any."""
    missing = missing_literals(text, required)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise StageFailure("instruct", "not_preserved",
                           f"the instruction lacks {missing[0]}{more}")


def check_items_preserved(items: Sequence[DescribedStep], required: Required,
                          context: str = "") -> None:
    """Raise ``instruct/not_preserved`` when the own literal of a step a line describes is
    missing from that line and from the ``context`` paragraph."""
    shared = set(code_spans(context))
    for item in items:
        line = shared | set(code_spans(item.target)) | set(code_spans(item.text))
        texts = item.own
        for k, i in enumerate(item.described):
            # a composed line: each step's literals also in its own words, not only in a
            # nested phrase of another step
            own = shared | set(code_spans(texts[k])) if texts else line
            for literal in required.by_step[i] if i < len(required.by_step) else ():
                if literal not in line or literal not in own:
                    raise StageFailure("instruct", "not_preserved",
                                       f"the line for {item.target} lacks `{literal}`")
