"""What a stage is: the :class:`Stage` protocol and the candidate context it works on.

A stage has a ``name`` (:data:`schemas.records.StageName`), a ``phase`` (the attempt's
timing column its time counts into), the context fields it ``needs`` and ``gives``, and
``run(ctx)``, which reads the fields it needs, sets those it gives, and raises
:class:`tasks.core.failures.StageFailure` to reject the candidate.

The fields set by the constructor are the pipeline's inputs (the wiring in ``flows/``
supplies them); every other field is unset until a stage gives it (reading it earlier
raises ``AttributeError``).  :class:`tasks.pipeline.Pipeline` checks, before anything
runs, that every field a stage needs is an input or given by an earlier stage.

The context owns the candidate's sandboxes: a stage enters each one it opens into
:attr:`CandidateContext.sandboxes` (an ``ExitStack``), which the pipeline's loop closes
when the candidate is done, however it ends; the gate closes them earlier, so that no
container is held while an LLM writes.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, fields
from typing import Literal, Protocol, get_args

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox
from schemas.graph import Candidate, WorkflowGraph
from schemas.records import StageName, TaskRow, TrajectoryRow
from schemas.trace import Trace
from schemas.verifier import Check, GateResult
from tasks.core.llm import LLMClient
from tasks.execute.realize import LiveEnvironment, OpenSandbox
from tasks.instruct.describe import Description
from tasks.instruct.instruction import Instruction
from tasks.instruct.preserve import Required
from tasks.reconstruct.cases import Case
from tasks.stages.settings import CandidateSettings

Phase = Literal["sandbox_s", "execute_s", "gate_s", "render_s"]
"""The attempt's timing columns a stage's time counts into."""
PHASES: tuple[Phase, ...] = get_args(Phase)


@dataclass(eq=False, repr=False)
class CandidateContext:
    """One candidate on its way through the pipeline."""

    # inputs, given by the wiring
    candidate: Candidate
    graph: WorkflowGraph
    """The graph as planned (``candidate.graph``); execution gives the graph as executed."""
    eco: Ecosystem
    run_id: str
    open_sandbox: OpenSandbox
    """Opens a sandbox of the candidate's ecosystem image plus extra Debian packages."""
    backend: str
    """The backend's name, as the task and attempt rows record it."""
    image: str
    """The base image the backend starts from (``local`` on the local backend)."""
    generator_version: str
    settings: CandidateSettings = field(default_factory=CandidateSettings)
    """The run's settings that the stages read (frozen: a stage that changes one gives a
    copy)."""
    llm: LLMClient | None = None
    """The LLM client (repair, paraphrase, reasoning), or None when none is configured."""

    # given by stages
    env: LiveEnvironment = field(init=False)
    """The live environment of execution (the gate may realize a fresh one of its own)."""
    trace: Trace = field(init=False)
    cases: list[Case] | None = field(init=False)
    """A reconstruct task's cases, public first (:mod:`tasks.reconstruct.cases`); None on other
    kinds."""
    before: dict = field(init=False)
    """The probe state the trace started from (the seed plus the repairs' additions)."""
    after: dict = field(init=False)
    """The probe state the trace ended in."""
    checks: list[Check] = field(init=False)
    verifier_py: str = field(init=False)
    solution_sh: str = field(init=False)
    descriptions: dict[str, Description] = field(init=False)
    """Literals the goal-level instruction names by description (literal -> description)."""
    draft: Instruction = field(init=False)
    """The instruction as the templates render it (the gate's literals control reads it)."""
    gate: GateResult = field(init=False)
    required: Required = field(init=False)
    instruction: Instruction = field(init=False)
    """The final instruction: the draft, or its paraphrase when an LLM's was kept."""
    task: TaskRow = field(init=False)
    trajectories: list[TrajectoryRow] = field(init=False)

    # kept by the pipeline's loop
    stage: StageName = field(init=False, default="sandbox")
    """The stage running (``accepted`` once all passed): infrastructure errors name it."""
    sandboxes: ExitStack = field(init=False, default_factory=ExitStack)
    opened: int = field(init=False, default=0)
    """Sandboxes opened so far (the attempt's ``sandboxes``)."""

    def open(self, packages: tuple[str, ...] = ()) -> AbstractContextManager[Sandbox]:
        """:attr:`open_sandbox`, counted."""
        sandbox = self.open_sandbox(packages)
        self.opened += 1
        return sandbox

    def close_sandboxes(self) -> None:
        """Close every sandbox entered so far (the stack can take new ones after)."""
        self.sandboxes.close()


INPUTS = frozenset(f.name for f in fields(CandidateContext) if f.init)
"""Fields set before any stage runs."""
FIELDS = frozenset(f.name for f in fields(CandidateContext)) - {"stage", "sandboxes", "opened"}
"""Fields a stage may need or give (giving an input replaces it)."""


class Stage(Protocol):
    """One step of the pipeline (see the module's docstring)."""

    name: StageName
    phase: Phase
    needs: tuple[str, ...]
    gives: tuple[str, ...]

    def run(self, ctx: CandidateContext) -> None: ...
