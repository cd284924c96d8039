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
from schemas.graph import Candidate
from schemas.trace import Trace

_INTENT = jinja2.Environment(finalize=lambda v: f"`{v}`", autoescape=False,
                             undefined=jinja2.StrictUndefined)
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=False, undefined=jinja2.StrictUndefined, trim_blocks=True)

OPENERS = [
    "You are working in a project workspace (your current directory). "
    "When you are done, the following must hold:",
    "Bring the workspace in the current directory into this state:",
    "Using the files in the current directory, produce the following results:",
    "The current directory holds a project's logs, data exports and configuration. "
    "Create or update these files:",
    "Prepare the following outputs from the files in your working directory:",
]
CLOSERS = [
    "Paths are relative to the current directory. Do not modify any other file.",
    "Leave every other file unchanged.",
    "Create parent directories if needed; do not touch files that are not listed.",
    "Only the files listed above may be created or changed.",
]
ANSWER_FORMATS = {"int": "as a plain integer", "number": "as a plain number",
                  "text": "exactly as stored, on one line"}


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
    return _TEMPLATES.get_template("instruction_goal.md.j2").render(
        opener=rng.choice(OPENERS), closer=rng.choice(CLOSERS), items=items).strip() + "\n"
