"""A task's environment rebuilt from its row: the ecosystem's image (docker) with the
trace's packages; each sandbox opened is realized by :class:`tasks.execute.realize.LiveEnvironment`
from the seed, the task's fault and the trace's additions.  ``check-harbor``'s identity
check and ``solve`` both start from it.  A reconstruct task's cases are rebuilt in it too
(:func:`rebuilt_cases`): its Harbor export ships the public examples they give."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from environments.docker.config import DockerConfig
from environments.docker.images import ecosystem_image
from environments.registry import make_provider
from environments.sandbox import Sandbox
from tasks.execute.realize import OpenSandbox
from tasks.exports.harbor import HarborError
from tasks.exports.harbor.environment import base_image
from tasks.exports.harbor.source import ExportTask
from tasks.reconstruct.arguments import program_arguments
from tasks.reconstruct.cases import Case, run_case
from tasks.reconstruct.program import reference_program


@contextmanager
def fresh_environments(task: ExportTask, run: str) -> Iterator[OpenSandbox]:
    """Opens sandboxes of the task's environment image, labelled with ``run``; the run's
    sandboxes are closed and reaped on exit."""
    config = ecosystem_image(task.eco, DockerConfig(image=base_image(task.row)),
                             tuple(task.trace.environment.packages))
    provider = make_provider(config, run)
    try:
        yield lambda _packages: provider.sandbox()
    finally:
        provider.close()
        provider.reap(run)


def rebuilt_cases(task: ExportTask, sandbox: Sandbox) -> list[Case]:
    """A reconstruct task's cases as the factory made them, public first: each public case
    realized afresh in ``sandbox`` (one of :func:`fresh_environments`; its workspace is
    left holding the last one) and the reference program run on it
    (:func:`tasks.reconstruct.cases.run_case`: its input and expected workspaces), each hidden
    case its
    seed files only.  HarborError when a public case's arguments are no longer the ones the
    row records."""
    eco, trace, graph = task.eco, task.trace, task.graph
    program, arguments = reference_program(eco, graph, trace), program_arguments(eco, graph)
    cases = []
    for ref in task.case_refs:
        if not ref["public"]:
            cases.append(Case(ref["name"], ref["seed"], False, eco.seed_state(ref["seed"]), [],
                              ref["args"]))
            continue
        case = run_case(sandbox, eco, graph, trace, program, ref["name"], ref["seed"], True,
                        arguments)
        if case.args != ref["args"]:
            raise HarborError(f"task {task.row.task_id}: case {case.name} now gets the "
                              f"arguments {case.args}, the task recorded {ref['args']}; "
                              "export it with the taskfactory that made it")
        cases.append(case)
    return cases
