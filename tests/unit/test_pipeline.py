"""The pipeline's stages fit together when it is built, or it says which stage misses what."""

from __future__ import annotations

import ast
import inspect
import sys
from contextlib import ExitStack

import pytest

from tasks.pipeline import PIPELINE, Pipeline, PipelineError
from tasks.stages.context import CandidateContext
from tasks.stages.execute import Execute
from tasks.stages.sandbox import OpenEnvironment
from tasks.stages.trajectories import Trajectories
from tasks.stages.verify import Verify


class Declared:
    """A stage with whatever declarations a test gives it."""

    phase = "render_s"

    def __init__(self, name: str, needs: tuple[str, ...] = (),
                 gives: tuple[str, ...] = ()) -> None:
        self.name, self.needs, self.gives = name, needs, gives

    def run(self, ctx: CandidateContext) -> None:
        """Gives nothing, whatever it declares."""


def test_the_factory_pipeline_runs_its_stages_in_the_documented_order():
    assert PIPELINE.names == ("sandbox", "execute", "cases", "verify", "describe", "draft",
                              "validate", "instruct", "trajectories")


def test_a_stage_whose_needs_no_earlier_stage_gives_is_refused_when_built():
    with pytest.raises(PipelineError) as caught:
        Pipeline(OpenEnvironment(), Verify(), Trajectories())
    assert str(caught.value) == (
        "stage 'verify' needs trace, before, after, cases, which neither the inputs nor an "
        "earlier stage give; put a stage that gives it before it")


def test_stages_in_the_wrong_order_are_refused_when_built():
    with pytest.raises(PipelineError, match="stage 'execute' needs env"):
        Pipeline(Execute(), OpenEnvironment(), *PIPELINE.stages[2:])


def test_a_field_the_context_does_not_have_is_refused():
    extra = Declared("realize", needs=("trace",), gives=("difficulty",))
    with pytest.raises(PipelineError, match="'realize' declares difficulty, which the "
                                            "candidate context does not have"):
        Pipeline(*PIPELINE.stages, extra)


def test_a_pipeline_that_gives_no_task_is_refused():
    with pytest.raises(PipelineError, match="no stage gives task, trajectories"):
        Pipeline(*PIPELINE.stages[:-1])


def test_names_are_stage_names_and_unique():
    with pytest.raises(PipelineError, match="stage 'verify' appears twice"):
        Pipeline(*PIPELINE.stages[:3], Verify(), *PIPELINE.stages[3:])
    with pytest.raises(PipelineError, match="add it to schemas.records.StageName"):
        Pipeline(*PIPELINE.stages, Declared("rollout"))


def test_a_stage_that_does_not_give_what_it_declares_fails_when_it_runs():
    liar = Pipeline(Declared("sandbox", gives=("task", "trajectories")))
    ctx = CandidateContext.__new__(CandidateContext)  # the loop reads no input before it
    ctx.sandboxes = ExitStack()
    with pytest.raises(PipelineError, match="stage 'sandbox' did not give task, trajectories"):
        liar.run(ctx)


def _context_uses(stage) -> tuple[set[str], set[str]]:
    """The context fields a stage's module reads and sets (``ctx.<field>``)."""
    tree = ast.parse(inspect.getsource(sys.modules[type(stage).__module__]))
    reads, sets = set(), set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "ctx"):
            (sets if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
    return reads, sets


@pytest.mark.parametrize("stage", PIPELINE.stages, ids=PIPELINE.names)
def test_every_stage_declares_exactly_what_its_code_reads_and_sets(stage):
    reads, sets = _context_uses(stage)
    lifecycle = {"sandboxes", "close_sandboxes"} | ({"open"} if "open_sandbox" in stage.needs
                                                    else set())
    assert sets == set(stage.gives)
    # a field the stage replaces (``describe`` rewrites the trace) is needed when declared
    assert reads - (sets - set(stage.needs)) - lifecycle == set(stage.needs) - {"open_sandbox"}, \
        stage.name
