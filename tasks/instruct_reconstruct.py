"""A reconstruct task's instruction: the workflow's instruction, restated as what a program
must do to any workspace of the layout, with the program's interface and the examples.

The inner text is the spec-style instruction of the graph (every literal written: the
program may rely on them); the wrapper adds the interface (``bash solution/run.sh DIR ARG...``),
the input layout (the top-level entries of an example's input) and where the public
examples are.  The same cases give the same text.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace

from tasks.arguments import Argument
from tasks.cases import Case
from tasks.examples import ARGS
from tasks.instruct import Instruction
from tasks.program import EXAMPLES, PROGRAM


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


def _arguments(arguments: list[Argument], first: Case) -> list[str]:
    if not arguments:
        return []
    lines = [f"The work above is written with `{first.name}`'s arguments; the program gets "
             "each case's arguments after `DIR`:", ""]
    for a, value in zip(arguments, first.args, strict=True):
        about = a.description.strip().rstrip(".")
        lines.append(f"- argument {a.position - 1}: {about[:1].lower()}{about[1:]} "
                     f"(`{value}` in `{first.name}`)")
    return [*lines, ""]


def reconstruct_instruction(inner: Instruction, cases: list[Case],
                            arguments: list[Argument]) -> Instruction:
    """``inner`` (the spec-style instruction of the workflow) as a reconstruct task's,
    whose program takes ``arguments``."""
    public = [c for c in cases if c.public]
    hidden = len(cases) - len(public)
    layout = ", ".join(f"`{n}`" for n in top_level(public[0]))
    names = ", ".join(f"`{c.name}`" for c in public)
    call = " ".join(["DIR", *(f"ARG{a.position - 1}" for a in arguments)])
    text = "\n".join([
        f"Write a program at `{PROGRAM}` that does the work below to any workspace laid out "
        f"like the examples, not only to one.  It is run as `bash {PROGRAM} {call}`, "
        "where `DIR` is the workspace to change in place (paths below are relative to "
        "`DIR`; the program is not started inside it), and must exit 0.",
        "",
        "What the program must do to `DIR`:",
        "",
        inner.text.strip(),
        "",
        *_arguments(arguments, public[0]),
        f"Input layout: `DIR` holds {layout}, as each example's input does.",
        "",
        f"Examples ({names}): `{EXAMPLES}/<case>/input/` is a workspace before the work, "
        f"`{EXAMPLES}/<case>/expected/` the same workspace after it and "
        f"`{EXAMPLES}/<case>/{ARGS}` the arguments it was run with.  Your program "
        f"will be judged on {hidden} other workspaces of this layout that you cannot see, "
        "so it must compute its outputs from `DIR`, not copy them from the examples.",
    ])
    return replace(inner, text=text + "\n", template_id=f"reconstruct/{inner.template_id}")
