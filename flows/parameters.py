"""A flow's ``settings`` as a run uses them (the factory's :class:`flows.settings.RunSettings`,
solve's :class:`flows.solve_settings.SolveSettings`: any settings model with a ``data``
field).

A deployment declares settings; Prefect replaces a parameter as a whole when a run
passes it (``prefect deployment run … -p settings='{"tasks": 12}'`` would otherwise drop
the deployment's backend and ecosystems).  So the fields a run gives are merged over its
deployment's settings, which are merged over the defaults.  And ``data`` is resolved where
the flow runs, at run time: a relative path under ``TASKFACTORY_HOME`` if that is set in
the flow run's environment (a worker's, or its job variables), else under the working
directory — never where the flow was deployed.
"""

import os
from pathlib import Path
from typing import Any, TypeVar

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from pydantic import BaseModel

HOME = "TASKFACTORY_HOME"
S = TypeVar("S", bound=BaseModel)


def deployment_settings() -> dict[str, Any]:
    """The ``settings`` the current flow run's deployment declares ({} without one)."""
    ctx = FlowRunContext.get()
    deployment_id = ctx.flow_run.deployment_id if ctx and ctx.flow_run else None
    if deployment_id is None:
        return {}
    with get_client(sync_client=True) as client:
        return dict(client.read_deployment(deployment_id).parameters.get("settings") or {})


def effective_settings(settings: S) -> S:
    """The fields ``settings`` was given, over the deployment's, over the defaults of its
    model; with ``data`` absolute (ValidationError for a merge that is not valid)."""
    given = settings.model_dump(mode="json", include=settings.model_fields_set)
    merged = type(settings).model_validate({**deployment_settings(), **given})
    data = Path(merged.model_dump()["data"])
    if data.is_absolute():
        return merged
    base = Path(os.environ.get(HOME) or Path.cwd())
    return merged.model_copy(update={"data": (base / data).absolute()})
