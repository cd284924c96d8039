"""Instructions: goal-style text derived from the executed trace.

Each tool's ``intent`` (a jinja2 noun phrase) describes what a step produced; inputs
render as code spans.  A goal-style instruction lists every output the verifier checks
and the literal each needs, never the commands.  Phrasing varies with the candidate seed.
"""

from __future__ import annotations

import random
from pathlib import Path

import jinja2

from environments.ecosystems import Ecosystem
from schemas.ecosystem import ToolSpec
from schemas.graph import Candidate
from schemas.trace import Trace

_INTENT = jinja2.Environment(finalize=lambda v: f"`{v}`", autoescape=False,
                             undefined=jinja2.StrictUndefined)
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=False, undefined=jinja2.StrictUndefined, trim_blocks=True)

OPENERS = [
    "When you are done, the following must hold:",
    "Bring the environment into this state:",
    "Produce the following results:",
    "Create or update the following:",
    "Prepare the following outputs:",
]
IN_ORDER = ("The items are listed in order: each one refers to the state left by the items "
            "before it.")
CLOSERS = [
    "Paths are relative to the current directory. Change nothing that is not listed.",
    "Leave everything else unchanged.",
    "Paths are relative to the working directory; do not touch anything not listed.",
    "Only what is listed above may be created or changed.",
]
ANSWER_FORMATS = {"int": "as a plain integer", "number": "as a plain number",
                  "text": "exactly as stored, on one line", "lines": "one item per line",
                  "json": "as JSON"}


def _changes_in_place(tool: ToolSpec) -> bool:
    if tool.effect != "write" or tool.creates or not tool.returns.from_param:
        return False
    return tool.param(tool.returns.from_param).fresh is None


def render_instruction(eco: Ecosystem, candidate: Candidate, trace: Trace) -> str:
    """The goal-style instruction for a validated trace."""
    rng = random.Random(f"instruction:{candidate.seed}")
    items = []
    for st in trace.steps:
        tool = eco.spec.tool(st.tool)
        phrase = _INTENT.from_string(tool.intent).render(**st.args)
        if tool.effect == "write":
            label = tool.returns.label or "{{ " + str(tool.returns.from_param) + " }}"
            items.append({"target": _INTENT.from_string(label).render(**st.args),
                          "text": phrase})
        elif st is trace.steps[-1]:
            fmt = ANSWER_FORMATS.get(tool.returns.parser, "on one line")
            items.append({"target": f"`{eco.spec.answer_file}`", "text": f"{phrase}, {fmt}"})
    in_place = any(_changes_in_place(eco.spec.tool(st.tool)) for st in trace.steps[:-1])
    return _TEMPLATES.get_template("instruction_goal.md.j2").render(
        context=eco.spec.context.strip(), opener=rng.choice(OPENERS),
        order=IN_ORDER if in_place else "", closer=rng.choice(CLOSERS),
        items=items).strip() + "\n"
