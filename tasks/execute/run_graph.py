"""Execution: run a candidate's workflow graph in its environment and record the trace.

Steps run in dependency order (the graph lists them so).  A failing step is handed to
the targeted repairs of :mod:`tasks.execute.repair` (at most ``max_repairs`` per candidate);
what they change — the step, the environment, or the graph's tail — is recorded on the
trace, and steps that already ran are never regenerated.  A failure no repair fixes
raises :class:`StageFailure` naming the step, the tool and the category.
"""

from __future__ import annotations

from environments.ecosystems import Ecosystem
from schemas.graph import Candidate, WorkflowGraph
from schemas.trace import Trace
from tasks.core.commands import answer_text
from tasks.core.failures import REPAIRABLE, StageFailure
from tasks.execute.realize import LiveEnvironment
from tasks.execute.repair import Repairer, Run, repair


def execute_graph(env: LiveEnvironment, eco: Ecosystem, candidate: Candidate,
                  max_repairs: int = 2, repairer: Repairer | None = None,
                  strict: bool = False) -> tuple[Trace, WorkflowGraph]:
    """Run the candidate's graph in ``env``; returns the trace and the graph as executed
    (repaired steps, truncated tail).  The final read step's output is the answer.

    ``max_repairs=0`` turns repair off; ``strict`` never replaces or drops a tool that
    failed (:func:`tasks.execute.repair.repair`).  Raises StageFailure when a step fails and no
    repair within the budget fixes it.
    """
    run = Run(env=env, eco=eco, candidate=candidate, graph=candidate.graph)
    i = 0
    while i < len(run.graph.steps):
        step = run.graph.steps[i]
        run.reset()
        try:
            st = run.run(step)
        except StageFailure as failure:
            run.dirty = run.dirty or eco.spec.tool(step.tool).effect == "write"
            fix = None
            if failure.reason in REPAIRABLE and len(run.repairs) < max_repairs:
                fix = repair(run, step, failure, repairer, strict)
            if fix is None:
                failure.detail = f"{step.id} {failure.detail}"
                raise
            run.repairs.append(fix.repair)
            if fix.trace is None:  # truncated: the next kept step now sits at index i
                run.graph = run.graph.without({step.id})
                continue
            st = fix.trace
            if fix.step is not None:
                steps = [fix.step if s.id == step.id else s for s in run.graph.steps]
                run.graph = run.graph.model_copy(update={"steps": steps})
        run.keep(st)
        i += 1
    run.reset()
    answer = None
    if eco.spec.tool(run.steps[-1].tool).effect == "read":
        answer = answer_text(run.steps[-1].output)
    trace = Trace(steps=run.steps, answer=answer, repairs=run.repairs,
                  environment=env.additions)
    return trace, run.graph
