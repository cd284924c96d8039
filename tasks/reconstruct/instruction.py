"""A reconstruct task's instruction: the workflow's instruction, restated as what a program
must do to any workspace of the layout, with the program's interface and the examples.

The inner text is the spec-style instruction of the graph, stated as a rule
(:func:`stated`): every argument is written as ``ARG1``, ``ARG2``... (the names the
interface ``bash solution/run.sh DIR ARG1 ...`` gives them), and a value a lookup printed
for a later step as the lookup's own description ("the CSV file under `data/` with the
most lines"), never as the entry it found in one case.  The literals left are those the
program writes whatever the case (paths of the layout, output names, fixed wording).  The
wrapper adds the interface, what each argument is, the input layout (the top-level
entries every example's input has) and where the examples, which show the values, are.
Long sentences are broken as goal-level ones are (:func:`tasks.rules.discourse.shorten`).
The same cases give the same text.
"""

from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass, replace

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.instruct.instruction import Instruction, render_instruction
from tasks.reconstruct.arguments import Argument, captured_reads, program_arguments
from tasks.reconstruct.cases import Case
from tasks.reconstruct.examples import ARGS
from tasks.reconstruct.program import EXAMPLES, PROGRAM
from tasks.rules.compose import Composed, render_phrase
from tasks.rules.discourse import head_noun, said_once, shorten


def argument_name(a: Argument) -> str:
    """How the instruction names argument ``a``: ``ARG1`` for the first after ``DIR``."""
    return f"ARG{a.position - 1}"


@dataclass(frozen=True)
class Stated:
    """The trace as the rule states it, the checks that name it, and the descriptions that
    replace looked-up values (placeholder -> phrase)."""

    trace: Trace
    checks: list[Check]
    described: dict[str, str]


def stated(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, checks: list[Check]) -> Stated:
    """``trace`` with each argument's value replaced by its name (``ARG1``...) and each value
    the program captures from a lookup replaced by a placeholder (in the lookup's output and
    where a later step uses it) that the lookup's description replaces in the text; the
    checks with a key named so renamed, and those keyed by a looked-up value dropped (its
    description names it)."""
    names = {(a.step_id, a.param): argument_name(a) for a in program_arguments(eco, graph)}
    reads = captured_reads(eco, graph)
    marks = {u: f"<value of {u}>" for u in reads.values()}
    renamed: dict[str, str] = {}
    looked_up: set[str] = set()
    described: dict[str, str] = {}
    steps = []
    for st in trace.steps:
        args = dict(st.args)
        for name, value in st.args.items():
            if (st.step_id, name) in names:
                args[name] = names[st.step_id, name]
                renamed.setdefault(value, args[name])
            elif (st.step_id, name) in reads:
                args[name] = marks[reads[st.step_id, name]]
        update: dict[str, object] = {"args": args}
        if st.step_id in marks:
            tool = eco.spec.tool(st.tool)
            shown = {n: Composed(described[v]) if v in described else v for n, v in args.items()}
            described[marks[st.step_id]] = render_phrase(tool.returns.label or tool.intent, shown)
            looked_up.add(str(st.output))
            update["output"] = marks[st.step_id]
        steps.append(st.model_copy(update=update))
    kept = [c if c.key not in renamed else c.model_copy(update={"key": renamed[c.key]})
            for c in checks if c.kind != "state" or c.key not in looked_up]
    return Stated(trace.model_copy(update={"steps": steps}), kept, described)


def top_level(case: Case) -> list[str]:
    """The entries at the top of a public case's input (folders with a trailing ``/``)."""
    names: set[str] = set()
    with tarfile.open(fileobj=io.BytesIO(case.input_tar), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.removeprefix("./").split("/")
            if parts[0] in ("", "."):
                continue
            names.add(parts[0] + ("/" if len(parts) > 1 or member.isdir() else ""))
    return sorted(names)


def _arguments(arguments: list[Argument]) -> list[str]:
    """The list of arguments, one line per description: arguments described alike share
    a line ("- `ARG2` and `ARG3`: commit to revert (one each)"), said once."""
    if not arguments:
        return []
    lines = [f"Arguments (each example's `{ARGS}` holds the values it was run with):", ""]
    alike: dict[str, list[str]] = {}
    for a in arguments:
        about = a.description.strip().rstrip(".")
        alike.setdefault(f"{about[:1].lower()}{about[1:]}", []).append(f"`{argument_name(a)}`")
    for about, names in alike.items():
        named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        lines.append(f"- {named}: {about}{' (one each)' if len(names) > 1 else ''}")
    return [*lines, ""]


_HERE = re.compile(r"\b(?:[Yy]our working directory|the (?:current|working) directory)\b")
"""How an ecosystem's context and an instruction's closer name the workspace, which for a
reconstruct task's program is ``DIR`` (it is not started inside it)."""


def _in_dir(text: str) -> str:
    """``text`` with the workspace it speaks of named ``DIR``: "Your working directory
    holds a small project" -> "`DIR` holds a small project"."""
    return _HERE.sub("`DIR`", text)


def reconstruct_instruction(inner: Instruction, cases: list[Case],
                            arguments: list[Argument]) -> Instruction:
    """``inner`` (the spec-style instruction of the workflow, stated as a rule) as a
    reconstruct task's, whose program takes ``arguments``."""
    public = [c for c in cases if c.public]
    hidden = len(cases) - len(public)
    shared = set.intersection(*(set(top_level(c)) for c in public))
    layout = ", ".join(f"`{n}`" for n in sorted(shared))
    names = ", ".join(f"`{c.name}`" for c in public)
    call = " ".join(["DIR", *(argument_name(a) for a in arguments)])
    text = "\n".join([
        f"Write a program at `{PROGRAM}` that does the work below to any workspace laid out "
        f"like the examples.  It is run as `bash {PROGRAM} {call}` and must exit 0.  `DIR` "
        "is the workspace to change in place.  Paths below are relative to it, and the "
        "program is not started inside it.",
        "",
        "What the program must do to `DIR`:",
        "",
        _in_dir(inner.text.strip()),
        "",
        *_arguments(arguments),
        f"Input layout: `DIR` holds {layout}, as each example's input does.",
        "",
        f"Examples ({names}): `{EXAMPLES}/<case>/input/` is a workspace before the work, "
        f"and `{EXAMPLES}/<case>/expected/` is the same workspace after it.  Your program "
        f"will be judged on {hidden} other workspaces of this layout that you cannot see.  "
        "It must compute its outputs from `DIR`, not copy them from the examples.",
    ])
    text = said_once(shorten(text))
    return replace(inner, text=text + "\n", template_id=f"reconstruct/{inner.template_id}")


def _key_of(description: str) -> tuple[str, str] | None:
    """(key, entry) of a description of an entry's key: "the customer_id of the customer
    with the most orders" -> ("customer_id", "the customer with the most orders")."""
    m = re.fullmatch(r"the (\w+) of (the .+)", description)
    return (m[1], m[2]) if m else None


def without_detours(text: str, described: list[str]) -> str:
    """``text`` without a looked-up entry reached through itself, which a description
    in place of a value makes of the ecosystem's wording: "the commit the newest commit on
    `main` that changed `a` points to" -> "the newest commit on `main` that changed `a`",
    and "the customer whose customer_id is the customer_id of the customer with the most
    orders" -> "the customer with the most orders".  The commit a described branch points
    to is its tip: "the commit the branch whose tip ... points to" -> "the tip of the branch
    whose tip ...", a description the reader takes in one step.  Only ``described``
    phrases."""
    for phrase in sorted(described, key=len, reverse=True):
        noun = head_noun(phrase)
        text = text.replace(f"the {noun} {phrase} points to", phrase)
        if noun == "branch":
            text = text.replace(f"the commit {phrase} points to", f"the tip of {phrase}")
        keyed = _key_of(phrase)
        if keyed is not None and head_noun(keyed[1]) in keyed[0]:
            noun = head_noun(keyed[1])
            text = text.replace(f"the {noun} whose {keyed[0]} is {phrase}", keyed[1])
    return text


def reconstruct_draft(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int,
                      checks: list[Check], cases: list[Case]) -> Instruction:
    """A reconstruct task's instruction: the spec style of the trace :func:`stated`,
    said without detours (:func:`without_detours`) and wrapped by
    :func:`reconstruct_instruction`."""
    rule = stated(eco, graph, trace, checks)
    inner = render_instruction(eco, graph, rule.trace, seed, "spec", rule.checks,
                               rule.described)
    inner = replace(inner, text=without_detours(inner.text, list(rule.described.values())))
    return reconstruct_instruction(inner, cases, program_arguments(eco, graph))
