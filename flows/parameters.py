"""The flow's ``settings`` as a run uses them.

A deployment declares full settings; Prefect replaces a parameter as a whole when a run
passes it (``prefect deployment run … -p settings='{"tasks": 12}'`` would otherwise drop
the deployment's backend and ecosystems).  So the fields a run gives are merged over its
deployment's settings, which are merged over the defaults.  And ``data`` is resolved where
the flow runs, at run time: a relative path under ``TASKFACTORY_HOME`` if that is set in
the flow run's environment (a worker's, or its job variables), else under the working
directory — never where the flow was deployed.
"""

import os
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext

from flows.settings import RunSettings

HOME = "TASKFACTORY_HOME"


def deployment_settings() -> dict[str, Any]:
    """The ``settings`` the current flow run's deployment declares ({} without one)."""
    ctx = FlowRunContext.get()
    deployment_id = ctx.flow_run.deployment_id if ctx and ctx.flow_run else None
    if deployment_id is None:
        return {}
    with get_client(sync_client=True) as client:
        return dict(client.read_deployment(deployment_id).parameters.get("settings") or {})


def effective_settings(settings: RunSettings) -> RunSettings:
    """The fields ``settings`` was given, over the deployment's, over the defaults; with
    ``data`` absolute (ValidationError for a merge that is not valid)."""
    given = settings.model_dump(mode="json", include=settings.model_fields_set)
    merged = RunSettings.model_validate({**deployment_settings(), **given})
    if merged.data.is_absolute():
        return merged
    base = Path(os.environ.get(HOME) or Path.cwd())
    return merged.model_copy(update={"data": (base / merged.data).absolute()})
