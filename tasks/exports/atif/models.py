"""The ATIF document (``ATIF-v1.0`` to ``ATIF-v1.8``) as pydantic models: what the export
writes and what the import accepts.

The fields and their rules follow RFC 0001 as Harbor's reference models state them: no
unknown keys at any level; ``steps`` numbered from 1 without gaps; ``model_name``,
``reasoning_effort``, ``reasoning_content``, ``tool_calls`` and ``metrics`` on agent steps
only, and no ``metrics`` or ``reasoning_content`` on an agent step that made no LLM call
(``llm_call_count`` 0); every observation result's ``source_call_id`` names a tool call of
its own step; a text part holds text and no source, a media part a source and no text;
embedded subagent trajectories carry unique ``trajectory_id``\\ s.  Custom data goes under
``extra`` (root, agent, step, tool call, observation result, metrics).  Documents are
written without null fields (:func:`dump`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Version = Literal["ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
                  "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8"]
WRITTEN: Version = "ATIF-v1.7"
"""The version the export writes: the newest whose fields it uses (``trajectory_id``,
``llm_call_count`` and the ``extra`` of tool calls and observation results came in 1.7)."""
Extra = dict[str, Any] | None
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MediaSource(_Strict):
    media_type: str
    path: str
    duration_sec: float | None = Field(default=None, ge=0)


class ContentPart(_Strict):
    """One part of a multimodal message or observation (1.6; audio 1.8)."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: MediaSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise ValueError("a text part holds 'text' and no 'source'")
        if self.type != "text" and (self.source is None or self.text is not None):
            raise ValueError(f"an {self.type} part holds a 'source' and no 'text'")
        return self


Content = str | list[ContentPart]


class Agent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    """The tools offered, in OpenAI's function-calling shape."""
    extra: Extra = None


class ToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: Extra = None


class SubagentRef(_Strict):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: Extra = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a subagent reference names a trajectory_id or a trajectory_path")
        return self


class ObservationResult(_Strict):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentRef] | None = None
    extra: Extra = None


class Observation(_Strict):
    results: list[ObservationResult]


class Metrics(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: Extra = None


class FinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: Extra = None


class Step(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: Extra = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.replace("Z", "+00:00"))  # ValueError: not ISO 8601
        return value

    @model_validator(mode="after")
    def _fields_of_source(self) -> Step:
        if self.source != "agent":
            for name in AGENT_ONLY:
                if getattr(self, name) is not None:
                    raise ValueError(f"'{name}' belongs to agent steps, not {self.source} ones")
        elif self.llm_call_count == 0 and (self.metrics or self.reasoning_content is not None):
            raise ValueError("an agent step without an LLM call (llm_call_count 0) has no "
                             "metrics or reasoning_content")
        calls = {c.tool_call_id for c in self.tool_calls or []}
        for result in self.observation.results if self.observation else []:
            if result.source_call_id is not None and result.source_call_id not in calls:
                raise ValueError(f"an observation result answers call "
                                 f"{result.source_call_id!r}, which step {self.step_id} does "
                                 "not make")
        return self


class Trajectory(_Strict):
    schema_version: Version = WRITTEN
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: Extra = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _numbered_and_unique(self) -> Trajectory:
        for i, step in enumerate(self.steps, start=1):
            if step.step_id != i:
                raise ValueError(f"steps are numbered from 1 without gaps: step {i} has "
                                 f"step_id {step.step_id}")
        ids = [sub.trajectory_id for sub in self.subagent_trajectories or []]
        if None in ids or len(set(ids)) != len(ids):
            raise ValueError("every embedded subagent trajectory has its own trajectory_id")
        return self


def dump(doc: Trajectory) -> dict[str, Any]:
    """The document as JSON data, without null fields."""
    return doc.model_dump(mode="json", exclude_none=True)
