"""The candidate's settings: the slice of a run's settings its stages read, one frozen object.

:class:`CandidateSettings` is the base of the run's settings model
(:class:`flows.settings.RunSettings`), so each field is declared once, with its default,
bounds and help; the run hands every candidate ``settings.candidate()``, the context holds
it as ``ctx.settings``, and the run's config hash hashes its fields.  A new setting a stage
reads is a field here, its flag in ``flows/commands/run.py`` and the stage that reads it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from schemas.records import InstructionStyle


class CandidateSettings(BaseModel):
    """What the stages of one candidate are asked to do (the run-level rest is the run's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_repairs: int = Field(2, ge=0, le=10, description=(
        "Targeted repairs per candidate; 0 turns repair off."))
    instruction_style: InstructionStyle = Field(
        "goal", title="Instruction Style", description=(
            "goal: the deliverables only (the outputs no later step consumes, the answer "
            "and the inputs the solver cannot discover); spec: every checked output, "
            "intermediates included, with every literal; step: the spec items as ordered "
            "steps."))
    require_observation: bool = Field(False, title="Require Observation", description=(
        "Keep only tasks that need observation: the reference solution with every value the "
        "instruction does not write replaced by a wrong one scores 0 (the open-loop control)."))
    strict: bool = Field(False, description=(
        "A step whose tool fails (its own error, a timeout, a resource limit, or something "
        "missing that no repair provides) rejects its candidate, instead of a repair "
        "replacing the tool with another or dropping the step."))

    def candidate(self) -> CandidateSettings:
        """Just the candidate's slice of these settings (a run's settings are more)."""
        return CandidateSettings.model_validate(
            self.model_dump(include=set(CandidateSettings.model_fields)))
