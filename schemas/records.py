"""Dataset rows: one pydantic model per Parquet table. Arrow schemas derive from these.

Every row carries a :class:`Provenance` (stamped by the writer's caller before the row is
written; the writer refuses rows without one).  ``SCHEMA_VERSION`` changes whenever a
table's columns change; readers accept every older version (missing columns read as
NULL) and refuse newer ones with a message naming both versions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from schemas.graph import TaskKind, Tier
from schemas.verifier import GateResult

SCHEMA_VERSION = 13
"""1: tasks, trajectories, attempts.  2: + provenance on every row, + steps and runs.
3: + ``tasks.needs_observation`` and the gate's open-loop reward, + ``attempts.tools`` and
``attempts.graph_json``.  4: + the gate's vandal reward (``tasks.gate.vandal_reward``).
5: + the gate's alternative reward.  6: + ``tasks.kind`` and ``tasks.fault``,
``attempts.kind``.  7: + ``tasks.scenario`` and ``attempts.scenario``.  8: + ``rollouts``.
9: reconstruct tasks: + ``tasks.public_cases``, ``tasks.hidden_cases``, ``tasks.cases_json``
and the gate's memorizer reward; the gate's empty and literals rewards are NULL where those
controls do not apply.  10: + the gate's hostile reward (``tasks.gate.hostile_reward``).
11: + the gate's near-miss and hardcoded rewards; checks of kind ``only`` and answer checks
compared by their parser; + ``rollouts.agent``, ``rollouts.turns`` (per assistant message:
the model's reasoning, token usage where the endpoint reported it) and
``rollouts.verifier_lines``; a rollout read from an ATIF document has the stop reason
``imported``.  12: + ``tasks.crosses`` (a stack's task that uses two or more of its
members).  13: + ``tasks.tier`` and ``attempts.tier`` (``--difficulty``)."""

Supervision = Literal["masked", "full", "actobs"]
ActionSpace = Literal["function", "terminal"]
InstructionStyle = Literal["goal", "spec", "step"]
"""``goal``: the deliverables only (the default); ``spec``: every checked output, with every
literal; ``step``: the spec items as ordered steps (see ``tasks/instruct/instruction.py``)."""
StageName = Literal["sandbox", "execute", "cases", "verify", "describe", "draft",
                    "validate", "instruct", "trajectories", "realize", "accepted", "dedup"]
"""Where a candidate stopped (``attempts.stage``, ``StageFailure.stage``): the pipeline's
stages, in the order ``tasks.pipeline.PIPELINE`` runs them (a unit test checks it) —
``sandbox`` (open and realize the environment), ``execute``, ``cases`` (a reconstruct
task's cases), ``verify`` (checks, verifier, solution), ``describe`` (literals named by
description), ``draft`` (the template instruction), ``validate`` (the gate),
``instruct`` (preservation, paraphrase), ``trajectories`` — then :data:`NOT_A_STAGE`."""
NOT_A_STAGE = ("realize", "accepted", "dedup")
"""The stage names that are not stages: ``realize``, a realization's own failure in
whichever stage realized; ``accepted`` (every stage passed); ``dedup`` (a duplicate of a
task the dataset holds)."""
AttemptStatus = Literal["accepted", "rejected", "errored"]
StopReason = Literal["solved", "gave_up", "turn_limit", "timeout", "malformed_call",
                     "endpoint_error", "imported"]
"""Why a rollout ended (``rollouts.stop_reason``): the agent finished and the verifier passed
(``solved``), it finished and the verifier failed (``gave_up``), it used every turn
(``turn_limit``) or the wall-clock limit (``timeout``), it called a tool that does not exist
or with arguments that are not a JSON object of the tool's parameters (``malformed_call``),
or the endpoint failed after its retries (``endpoint_error``).  The verifier scores every
attempt, whatever stopped it.  ``imported``: an attempt of another agent, read from an ATIF
document by ``taskfactory import atif`` with its trial's reward; how it ended is that agent's."""
SOLVE_AGENT = "taskfactory"
"""``rollouts.agent`` of the attempts of ``taskfactory solve``'s own agent loop."""
LLM_SUFFIX = "+llm:"
"""Appended to a ``template_id``, with the model, when an LLM paraphrase was kept."""


class Provenance(BaseModel):
    """Where a row came from: enough to reproduce it, or to know why it cannot be."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    flow_run_id: str | None
    """The Prefect flow run that wrote the row (a resumed run has a new one)."""
    generator_version: str
    """``<package version>+g<git commit>``."""
    config_hash: str
    """Hash of every setting that changes outputs (see ``tasks.dataset.provenance.config_hash``)."""
    seed: int
    """The candidate's seed (the run seed on ``runs`` rows)."""
    image_id: str | None
    """The sandbox image id (``sha256:...``) on docker; None on the local backend."""
    template_hash: str
    """Hash of the instruction and verifier templates."""
    llm_model: str | None
    llm_params: str | None
    """JSON of the LLM sampling parameters, when an LLM is configured."""
    created_at: datetime


class TableRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    provenance: Provenance | None = None
    """Required in the dataset: :class:`tasks.dataset.store.writer.ShardWriter` refuses rows
    without it."""


class TaskRow(TableRow):
    """An accepted task: everything needed to run, verify and export it."""

    task_id: str
    run_id: str
    candidate_id: str
    ecosystem: str
    ecosystem_version: str
    seed: int
    shape: str
    depth: int
    n_steps: int
    fingerprint: str
    tools: list[str]
    instruction: str
    instruction_style: InstructionStyle
    template_id: str
    """The template variant that rendered the instruction: ``style/layout/opener/closer``,
    then ``/<report label>`` on a fix task (``+llm:<model>`` appended when an LLM
    paraphrase was kept)."""
    instruction_literals: list[str]
    """Every literal the instruction must hold as a Markdown code span (preservation)."""
    answer: str | None
    solution_sh: str
    verifier_py: str
    checks_json: str
    graph_json: str
    trace_json: str
    env_digest: str
    initial_state_sha256: str | None = None
    """sha256 of the probe state execution started from (canonical JSON); exports check
    that a rebuilt environment reproduces it."""
    kind: TaskKind | None = None
    """``build``, ``fix`` or ``reconstruct`` (``schemas.graph.TaskKind``); None on tasks
    made before kinds existed (all of them build tasks)."""
    public_cases: int | None = None
    """A reconstruct task's public examples (input and expected output in the agent's
    workspace); None on other kinds."""
    hidden_cases: int | None = None
    """A reconstruct task's hidden cases (only in its verifier); None on other kinds."""
    cases_json: str | None = None
    """A reconstruct task's cases (``schemas.cases.CaseRef`` list as JSON: name, seed,
    public); None on other kinds."""
    fault: str | None = None
    """A fix task's fault injector: its environment is the seed with that defect planted."""
    scenario: str | None = None
    """The ecosystem scenario the task serves (its instruction says why); None outside any."""
    crosses: bool | None = None
    """A stack's task whose tools use two or more of its members (a tool of the stack's own
    counts as crossing by itself); None outside a stack, and before schema 12."""
    tier: Tier | None = None
    """The run's ``--difficulty`` (``schemas.graph.Tier``); None before schema 13."""
    image: str
    backend: str
    gate: GateResult
    needs_observation: bool | None = None
    """The open-loop control scored below 1 (``gate.open_loop_reward``): the task cannot be
    solved from the instruction's values alone.  None on tasks gated before it existed."""
    generator_version: str
    created_at: datetime


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: str
    """JSON-encoded arguments, as the OpenAI format stores them."""


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    type: str = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message in OpenAI / Hugging Face shape plus per-message loss flags.

    ``train`` / ``weight`` say whether the whole message is trained (axolotl's
    ``message_field_training``, OpenAI fine-tuning's ``weight``).  ``reasoning_content``
    is the assistant's reasoning for that turn; rows that do not train reasoning leave it
    out, since a per-message flag cannot exclude part of a message.
    """

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    train: bool = False
    weight: int = 0


class TrajectoryRow(TableRow):
    trajectory_id: str
    task_id: str
    run_id: str
    messages: list[Message]
    tools: str
    """JSON-encoded list of function definitions."""
    supervision: Supervision
    """``masked``: assistant tool calls and final answer trained, no reasoning;
    ``full``: also the reasoning; ``actobs``: also the tool observations."""
    action_space: ActionSpace
    """``function``: the ecosystem's typed tools; ``terminal``: one ``bash`` tool."""
    reward: float
    n_turns: int
    """Assistant messages."""
    rendering: str = "template"
    """``template``, or ``llm:<model>`` when the reasoning came from an LLM."""
    created_at: datetime


class RolloutTurn(BaseModel):
    """What the endpoint said of one assistant message of a rollout besides the message."""

    model_config = ConfigDict(extra="forbid")

    reasoning_content: str | None = None
    """The model's reasoning for the turn, when the endpoint sent it."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    """The turn's usage as the endpoint reported it; None where it reported none."""
    finish_reason: str | None = None
    latency_s: float | None = None
    """Seconds waiting for the endpoint, retries included."""


class RolloutRow(TableRow):
    """One attempt of an agent on a task, in a fresh sandbox from the task's initial state.

    The conversation columns (``trajectory_id`` .. ``tools``) have the shape of
    ``trajectories`` rows, so the SFT exports read either table.  ``(task_id, model,
    attempt)`` is the row's identity: ``taskfactory solve`` never writes it twice."""

    trajectory_id: str
    """The rollout's id: a hash of task, model, action space and attempt index."""
    task_id: str
    run_id: str
    messages: list[Message]
    tools: str
    supervision: Supervision = "masked"
    action_space: ActionSpace
    reward: float
    n_turns: int
    """Assistant messages."""
    model: str
    attempt: int
    """0-based index of the attempt for this task and model."""
    k: int
    """Attempts per task the solve was asked for (pass@k's k)."""
    ecosystem: str
    kind: TaskKind | None
    stop_reason: StopReason
    detail: str
    """What stopped the attempt, in a line (the malformed call, the endpoint's error)."""
    checks_passed: int
    checks_total: int
    prompt_tokens: int
    completion_tokens: int
    llm_s: float
    """Seconds waiting for the endpoint, retries included."""
    total_s: float
    unchecked_changes: list[str]
    """Probed entries (``section/key``) where the final state differs from the reference's
    and no check of the task looks: with reward 1, a possible reward hack."""
    created_at: datetime
    agent: str | None = None
    """Who made the attempt: :data:`SOLVE_AGENT` (``solve``'s agent loop), or the
    ``agent.name`` of an imported ATIF document; None on rollouts before schema 11."""
    turns: list[RolloutTurn] | None = None
    """One per assistant message of ``messages``, in order (None before schema 11)."""
    verifier_lines: list[str] | None = None
    """The verifier's ``PASS``/``FAIL`` line per check, as it printed them (None before
    schema 11 and on imported attempts)."""


class AttemptRow(TableRow):
    """Every candidate, accepted or rejected, with the stage it reached and why.

    ``errored``: the infrastructure failed under the candidate (reason ``engine`` or
    ``prefect_api``); not a verdict on it: a later run of the same config runs it again and
    commits another attempt, which supersedes this one."""

    candidate_id: str
    run_id: str
    index: int
    ecosystem: str
    seed: int
    shape: str
    depth: int
    fingerprint: str
    status: AttemptStatus
    stage: StageName
    reason: str
    detail: str
    task_id: str | None
    backend: str
    repairs: list[str]
    """One line per repair applied: ``kind step_id reason: detail``."""
    kind: TaskKind | None = None
    """The candidate's kind (None in attempts of datasets before schema 6)."""
    scenario: str | None = None
    """The candidate's scenario (None outside any, and before schema 7)."""
    tier: Tier | None = None
    """The candidate's ``--difficulty`` (None before schema 13)."""
    tools: list[str] | None = None
    """The tools of the candidate's graph as planned, in step order (NULL in attempts of
    datasets before schema 3); what ran is in ``repairs`` and the task's trace."""
    graph_json: str | None = None
    """The planned graph itself (``schemas.graph.WorkflowGraph`` as JSON), so a rejected
    candidate can be inspected and run again."""
    sandboxes: int
    """Sandboxes started for the candidate: one for execution and the gate; with repairs, one
    per image a repair rebuilt and the gate's fresh one."""
    sandbox_s: float
    execute_s: float
    gate_s: float
    render_s: float
    total_s: float
    created_at: datetime


class StepRow(TableRow):
    """One executed step of an accepted task's reference trace."""

    task_id: str
    run_id: str
    position: int
    """0-based order of execution."""
    step_id: str
    tool: str
    args_json: str
    command: str
    exit_code: int
    stdout: str
    stderr: str
    """stdout and stderr are capped (tail kept); ``truncated`` says when."""
    truncated: bool
    duration_s: float
    output_type: str


class RunRow(TableRow):
    """One row per finished run, written last (a killed run has none until resumed)."""

    run_id: str
    flow_run_id: str | None
    settings_json: str
    config_hash: str
    generator_version: str
    status: Literal["complete"]
    started_at: datetime
    finished_at: datetime
    resumes: int
    """How many times the run was continued with ``--resume``."""
    candidates: int
    """Planned by the run's settings."""
    skipped: int
    """Already recorded in the dataset under the same config hash: not run again."""
    accepted: int
    rejected: int
    duplicates: int
    """Rejected by dedup (counted in ``rejected`` too)."""


TABLES: dict[str, type[TableRow]] = {
    "tasks": TaskRow,
    "trajectories": TrajectoryRow,
    "steps": StepRow,
    "attempts": AttemptRow,
    "runs": RunRow,
    "rollouts": RolloutRow,
}
