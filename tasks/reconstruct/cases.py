"""The cases of a reconstruct task: several initial states of one layout, each with the
outcome the reference program leaves in it.

A reconstruct candidate's graph was executed on its own seed (the first public case).
:func:`case_seeds` lists the other seeds to try: derived from the candidate's, each laying
out every seeded path the graph reads and holding the values it names that are not its
arguments (a program is written against a layout).
:func:`run_cases` realizes each case in the candidate's sandbox, draws the program's
arguments on it (:func:`tasks.reconstruct.arguments.case_arguments`), runs the reference program
(:mod:`tasks.reconstruct.program`) on it and derives the case's checks from its probe delta, as a
build task's are derived (:func:`tasks.verify.verifier.derive_checks`); it also records what each
of the program's choices resolved to there (:mod:`tasks.reconstruct.choices`).  A derived seed on
which the graph cannot run (no value for an argument, a step fails) is skipped and the
next one tried, up to :data:`CASE_TRIES`.

The first :data:`CASES_PUBLIC` cases are the agent's examples (their initial and final
workspaces are kept as tarballs); the other :data:`CASES_HIDDEN` live only in the
verifier, as their seed files, and are picked so that each choice resolves, on one of them,
to an entry no example has (seeds are tried for that up to :data:`CHOICE_TRIES`).  A graph
is rejected (stage ``cases``) when a repair added files the layout lacks
(``case_layout``), when the program fails on the candidate's own seed or ends elsewhere
than the trace (``case_failed``), when too few derived seeds give a case (the last skip's
reason, ``case_layout`` when none was tried), when a case's workspace is too large to
ship (``case_too_large``), when a choice resolves to an example's entry on every hidden
case it could pick (``choice_untested``: a program that hard-codes the examples' entry
would pass) or when its outputs are the same on every hidden case (``invariant_outputs``:
a program that ignores its input would pass).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox
from schemas.graph import WorkflowGraph
from schemas.trace import Trace
from schemas.verifier import GUARDS, Check
from tasks.core.commands import solution_failure
from tasks.core.failures import StageFailure
from tasks.execute.realize import first_difference, probe, realize, state_without
from tasks.plan.layout import CASES_HIDDEN, CASES_PUBLIC, layout_seeds, read_paths, with_folders
from tasks.reconstruct.arguments import Argument, case_arguments, program_arguments
from tasks.reconstruct.choices import choice_steps, kept, pick_hidden, recorder, untested
from tasks.verify.verifier import derive_checks

CASE_TRIES = 16
"""Derived seeds the program is run on, at most, to find the other cases."""
CHOICE_TRIES = 80
"""... and, at most, to find hidden cases on which each choice resolves to an entry no
public case has (:mod:`tasks.reconstruct.choices`)."""
SKIPPED = ("case_layout", "case_failed")
"""Why a derived seed is skipped (no value for an argument, a step fails on it)."""
CONTENT_SCAN = 40
"""Of those, seeds whose files are generated to look for the values the program names."""
MIN_NAMED = 3
"""Shorter values the program names (a count, a flag) are not part of the layout."""
PROGRAM_TIMEOUT_S = 30.0
"""How long the program may run on one case (the verifier enforces the same)."""
TAR_CAP = 512 * 1024
"""The largest public workspace (gzip tarball, bytes) shipped as an example."""
_TAR = ("tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . "
        "| gzip -n | base64 -w0")


@dataclass(frozen=True)
class Case:
    """One initial state and the outcome the reference program leaves in it."""

    name: str
    seed: int
    public: bool
    files: dict[str, bytes]
    """The seed files (the verifier realizes a hidden case from them)."""
    checks: list[Check]
    args: list[str] = field(default_factory=list)
    """The program's arguments on this case (:mod:`tasks.reconstruct.arguments`)."""
    input_tar: bytes = field(default=b"", repr=False)
    """A public case's initial workspace (gzip tarball); empty for a hidden one."""
    expected_tar: bytes = field(default=b"", repr=False)
    """A public case's workspace after the program; empty for a hidden one."""
    after: dict = field(default_factory=dict, repr=False)
    """The probe state the program left (without the answer file)."""
    choices: dict[str, str] = field(default_factory=dict)
    """What each choice of the program (:mod:`tasks.reconstruct.choices`) resolved to: step id ->
    value."""

    @property
    def outputs(self) -> str:
        """The expected outputs (every check but the guards), canonical JSON."""
        return json.dumps([[c.kind, c.section, c.key, c.expected] for c in self.checks
                           if c.kind not in GUARDS], sort_keys=True, default=str)

    def ref(self) -> dict:
        """What the task row records of the case."""
        return {"name": self.name, "seed": self.seed, "public": self.public,
                "args": self.args, "choices": self.choices}


def reconstruct_verifier_timeout(cases: list[Case]) -> float:
    """How long a reconstruct verifier may take: setup and program on each hidden case."""
    return 60.0 + sum(2 * PROGRAM_TIMEOUT_S for c in cases if not c.public)


def case_name(index: int) -> str:
    """``case-a``, ``case-b`` ... for the public cases, ``hidden-a`` ... after them (letters:
    an instruction's code span never shows a number a task may answer)."""
    if index < CASES_PUBLIC:
        return f"case-{'abcdefghij'[index]}"
    return f"hidden-{'abcdefghij'[index - CASES_PUBLIC]}"


def named_values(graph: WorkflowGraph, trace: Trace, paths: set[str],
                 arguments: list[Argument]) -> set[str]:
    """The values the program names that came from the seeded state (bound from it or
    sampled in it), other than its arguments, paths and values shorter than
    :data:`MIN_NAMED`."""
    binds = {s.id: s.bind for s in graph.steps}
    taken = {(a.step_id, a.param) for a in arguments}
    return {value for st in trace.steps for name, value in st.args.items()
            if (b := binds.get(st.step_id, {}).get(name)) is not None
            and b.kind in ("state", "sample") and len(value) >= MIN_NAMED
            and value.rstrip("/") not in paths and (st.step_id, name) not in taken}


def case_needs(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int,
               arguments: list[Argument]) -> tuple[set[str], set[str]]:
    """What another seed must hold to be a case: the seeded paths the graph reads or names
    and the other values the program names that the candidate's seed files hold (a
    branch, a column, a table)."""
    own = eco.seed_state(seed)
    named = named_values(graph, trace, read_paths(eco, graph, seed), arguments)
    paths = {v.rstrip("/") for v in named if v.rstrip("/") in with_folders(own)}
    return (read_paths(eco, graph, seed) | paths,
            {v for v in named if v.rstrip("/") not in paths
             and v.encode() in b"\0".join(own.values())})


def case_seeds(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int,
               arguments: list[Argument]) -> Iterator[int]:
    """The derived seeds of the same layout, in order: each lays out every path the graph
    reads (:mod:`tasks.plan.layout`) and holds what :func:`case_needs` names; at most
    :data:`CONTENT_SCAN` seeds' files are generated to look for the values."""
    paths, named = case_needs(eco, graph, trace, seed, arguments)
    read = 0
    for other in layout_seeds(eco, graph, seed):
        if not paths <= with_folders(eco.state_paths(other)):
            continue
        if named:
            if read == CONTENT_SCAN:
                return
            read += 1
            blob = b"\0".join(eco.seed_state(other).values())
            if not all(v.encode() in blob for v in named):
                continue
        yield other


def _workspace_tar(sandbox: Sandbox, name: str) -> bytes:
    done = sandbox.exec(["bash", "-c", f"set -o pipefail; {_TAR}"], timeout=60)
    if done.exit_code != 0:
        raise StageFailure("cases", "environment", f"case {name}: cannot archive the "
                                                    f"workspace: {done.stderr.strip()[-200:]}")
    data = base64.b64decode(done.stdout) if not done.truncated else b""
    if done.truncated or len(data) > TAR_CAP:
        raise StageFailure("cases", "case_too_large", f"case {name}'s workspace is larger "
                                                       f"than {TAR_CAP} bytes compressed")
    return data


def _program_run(sandbox: Sandbox, eco: Ecosystem, trace: Trace, program: str,
                 args: list[str], where: str) -> tuple[str | None, dict[str, str]]:
    """Runs the program in the workspace; the answer it wrote (None when the trace has
    none) and what each of its choices resolved to.  ``case_failed`` when it fails or
    writes no answer (``where`` names the case)."""
    keep = f"/tmp/taskfactory-choices-{uuid.uuid4().hex}"
    names = [st.step_id for st in choice_steps(eco, trace) if st.step_id in kept(eco, trace)]
    done = sandbox.exec(["bash", "-s", "--", ".", *args], timeout=PROGRAM_TIMEOUT_S,
                        stdin=f"{program.rstrip()}\n{recorder(names, keep)}\n".encode())
    if done.exit_code != 0:
        what = "timed out" if done.timed_out else solution_failure(done.exit_code, done.stderr)
        raise StageFailure("cases", "case_failed", f"the program fails on {where}: {what}")
    values = sandbox.read_file(keep).decode("utf-8", errors="replace").split("\0")
    sandbox.exec(["rm", "-f", keep])
    chosen = dict(zip(names, values, strict=False))
    if trace.answer is None:
        return None, chosen
    answer_file = eco.spec.answer_file
    try:
        answer = sandbox.read_file(answer_file).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise StageFailure("cases", "case_failed",
                           f"the program writes no {answer_file} on {where}") from None
    last = trace.steps[-1]
    if eco.spec.tool(last.tool).observes_value:
        chosen[last.step_id] = answer.strip()
    return answer, chosen


def run_case(sandbox: Sandbox, eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
             program: str, name: str, seed: int, public: bool,
             arguments: list[Argument]) -> Case:
    """Case ``name``: seed ``seed`` realized in the emptied workspace, the program run on
    it with the case's arguments (the trace's own on the candidate's seed), its checks
    derived from the probe delta and its choices' values recorded."""
    sandbox.exec(["bash", "-c", "find . -mindepth 1 -delete"], timeout=60)
    files, initial = realize(sandbox, eco, seed)
    before = probe(sandbox, eco)
    if name == case_name(0):
        traced = {st.step_id: st.args for st in trace.steps}
        args = [traced[a.step_id][a.param] for a in arguments]
    else:
        args, ran = case_arguments(sandbox, eco, graph, trace, arguments, seed, before)
        if ran:
            sandbox.restore(initial)
    input_tar = _workspace_tar(sandbox, name) if public else b""
    answer, chosen = _program_run(sandbox, eco, trace, program, args,
                                  f"case {name} (seed {seed})")
    after = state_without(probe(sandbox, eco), eco.spec.answer_file)
    if answer is not None:  # this case's answer, as the program wrote it
        trace = trace.model_copy(update={"answer": answer})
    try:
        checks = derive_checks(eco, trace, before, after)
    except StageFailure as failure:
        raise StageFailure("cases", failure.reason,
                           f"case {name} (seed {seed}): {failure.detail}") from failure
    return Case(name, seed, public, files, checks, args, input_tar,
                _workspace_tar(sandbox, name) if public else b"", after, chosen)


def run_cases(sandbox: Sandbox, eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
              program: str, seed: int, traced_after: dict | None = None) -> list[Case]:
    """Every case of the task, public first.  The first is the candidate's own seed:
    there the program must run and end where the trace ended (``traced_after``, when
    given), else ``case_failed``.  The others come from the derived seeds
    (:func:`case_seeds`) the program runs on, a seed with no value for an argument
    (``case_layout``) or on which a step fails (``case_failed``) skipped: the first is
    public, and the hidden ones are picked so that each choice resolves, on one of them,
    to an entry no public case has (:func:`tasks.reconstruct.choices.pick_hidden`), trying up to
    :data:`CASE_TRIES` seeds for enough cases and up to :data:`CHOICE_TRIES` for that.
    Too few cases is the last skip's reason; a choice no hidden case tests is
    ``choice_untested``."""
    if trace.environment.files or trace.environment.dirs:
        raise StageFailure("cases", "case_layout",
                           "a repair added files or folders the ecosystem's layout lacks: "
                           + ", ".join([*trace.environment.files, *trace.environment.dirs]))
    arguments = program_arguments(eco, graph)
    first = run_case(sandbox, eco, graph, trace, program, case_name(0), seed, True, arguments)
    answer = eco.spec.answer_file
    where = None if traced_after is None else first_difference(
        state_without(first.after, answer), state_without(traced_after, answer))
    if where is not None:
        raise StageFailure("cases", "case_failed", "on the candidate's own seed the program "
                                                   f"ends elsewhere than the trace, at {where}")
    found, skipped = _derived_cases(sandbox, eco, graph, trace, program, seed, first)
    return _chosen_cases(eco, graph, trace, seed, first, found, skipped)


def _derived_cases(sandbox: Sandbox, eco: Ecosystem, graph: WorkflowGraph, trace: Trace,
                   program: str, seed: int, first: Case
                   ) -> tuple[list[Case], list[StageFailure]]:
    """The cases of the derived seeds the program runs on, in order (the first public, the
    others named ``hidden`` until picked), and the skipped seeds' failures: until enough
    cases are found and every choice is tested (see :func:`run_cases`)."""
    arguments = program_arguments(eco, graph)
    ids = [st.step_id for st in choice_steps(eco, trace)]
    need = CASES_PUBLIC + CASES_HIDDEN - 1
    found: list[Case] = []
    skipped: list[StageFailure] = []
    for other in case_seeds(eco, graph, trace, seed, arguments):
        tries = len(found) + len(skipped)
        if len(found) >= need:
            if tries >= CHOICE_TRIES or not _untested(ids, *_split(ids, first, found)):
                break
        elif tries >= CASE_TRIES:
            break
        public = len(found) < CASES_PUBLIC - 1
        try:
            found.append(run_case(sandbox, eco, graph, trace, program,
                                  case_name(len(found) + 1) if public else "hidden", other,
                                  public, arguments))
        except StageFailure as failure:
            if failure.reason not in SKIPPED:
                raise
            skipped.append(failure)
    return found, skipped


def _split(ids: list[str], first: Case, found: list[Case]) -> tuple[list[Case], list[Case]]:
    """The public cases, and the hidden ones :func:`tasks.reconstruct.choices.pick_hidden` picks of
    ``found`` for the choices ``ids``."""
    public = [first, *[c for c in found if c.public]]
    pool = [c for c in found if not c.public]
    picked = pick_hidden(ids, [c.choices for c in public], [c.choices for c in pool],
                         CASES_HIDDEN)
    return public, [pool[i] for i in picked]


def _untested(ids: list[str], public: list[Case], hidden: list[Case]) -> list[str]:
    return untested(ids, [c.choices for c in public], [c.choices for c in hidden])


def _chosen_cases(eco: Ecosystem, graph: WorkflowGraph, trace: Trace, seed: int, first: Case,
                  found: list[Case], skipped: list[StageFailure]) -> list[Case]:
    """The task's cases, public first, picked of ``found`` (see :func:`run_cases`)."""
    n = CASES_PUBLIC + CASES_HIDDEN
    if len(found) < n - 1 and not skipped:
        paths, named = case_needs(eco, graph, trace, seed, program_arguments(eco, graph))
        raise StageFailure("cases", "case_layout",
                           f"{len(found)} other seeds lay out "
                           f"{', '.join(sorted(paths | named))}; {n - 1} needed")
    if len(found) < n - 1:
        raise StageFailure("cases", skipped[-1].reason,
                           f"{len(found)} other seeds give a case, {n - 1} needed "
                           f"({len(skipped)} skipped; last: {skipped[-1].detail})")
    ids = [st.step_id for st in choice_steps(eco, trace)]
    public, hidden = _split(ids, first, found)
    hidden = [replace(c, name=case_name(CASES_PUBLIC + k)) for k, c in enumerate(hidden)]
    missed = _untested(ids, public, hidden)
    if missed:
        tools = {st.step_id: st.tool for st in trace.steps}
        ran = [first, *found]
        raise StageFailure("cases", "choice_untested", "; ".join(
            f"{sid} {tools[sid]} resolves to "
            f"{', '.join(sorted({str(c.choices.get(sid)) for c in ran}))} on every one of "
            f"the {len(ran)} seeds the program ran on, so no hidden case tests its rule"
            for sid in missed))
    if len({c.outputs for c in hidden}) < 2:
        raise StageFailure("cases", "invariant_outputs",
                           f"the program's outputs are the same on all {len(hidden)} hidden "
                           "cases: a program that ignores its input would pass")
    return [*public, *hidden]
