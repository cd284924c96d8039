"""What a run shows in the Prefect UI: names, tags, candidate outcomes, where the data went.

- the flow run is named ``<run id> seed <seed>``;
- a candidate's task run is named ``<ecosystem> #<index> <candidate id>`` and tagged
  ``ecosystem:<name>`` and ``outcome:<status>``, sent with its final state (tags given at
  submission would make Prefect's task engine ask the server for tag concurrency limits
  before every task run: measured, the first runs of each new tag waited ~2 s for it);
- a candidate's task run ends in a ``Completed`` state named after the attempt's status
  (``Accepted``, ``Rejected``, and likewise any other status): a completed state keeps the
  result and its cache entry, while the name tells the outcome apart in the run's graph,
  its task run list and the events (``prefect.task-run.Rejected``);
- a candidate that is not accepted logs one warning: its status, stage, reason and detail;
- the dataset's host and absolute path lead the run summary, and a link artifact points
  at it (``file://HOST/PATH``).
"""

import socket
from pathlib import Path
from uuid import UUID

from prefect import get_run_logger
from prefect.artifacts import create_link_artifact
from prefect.client.orchestration import get_client
from prefect.context import TaskRunContext
from prefect.runtime import flow_run
from prefect.states import Completed, State

from tasks.pipeline import Outcome

CANDIDATE_RUN_NAME = "{candidate.ecosystem} #{candidate.index} {candidate.candidate_id}"


def name_flow_run(run_id: str, seed: int) -> None:
    """Name the current flow run after the taskfactory run and its seed."""
    flow_run_id = flow_run.get_id()
    assert flow_run_id is not None, "name_flow_run() runs inside a flow run"
    with get_client(sync_client=True) as client:
        client.set_flow_run_name(UUID(flow_run_id), name=f"{run_id} seed {seed}")


def outcome_state(outcome: Outcome) -> State:
    """The final state of a candidate's task run; tags it with its ecosystem and outcome
    and logs one line for a candidate that is not accepted.  Call from inside the task run."""
    a = outcome.attempt
    ctx = TaskRunContext.get()
    if ctx is not None and ctx.task_run is not None:  # sent with the run's final state
        ctx.task_run.tags = [*ctx.task_run.tags, f"ecosystem:{a.ecosystem}",
                             f"outcome:{a.status}"]
    if a.status != "accepted":
        get_run_logger().warning("%s: stage %s, reason %s: %s", a.status, a.stage, a.reason,
                                 a.detail or "-")
    return Completed(name=a.status.capitalize(), data=outcome,
                     message=f"task {a.task_id}" if a.task_id else f"{a.stage}: {a.reason}")


def dataset_location(data: Path) -> tuple[str, str]:
    """(host, absolute path) of a dataset folder on the machine the flow runs on."""
    return socket.gethostname(), str(data.absolute())


def publish_location(data: Path, run_id: str) -> None:
    """A link artifact to the dataset folder, named by host and path."""
    host, path = dataset_location(data)
    create_link_artifact(key="taskfactory-dataset", link=f"file://{host}{path}",
                         link_text=f"{host}:{path}",
                         description=f"the dataset run {run_id} writes (a folder on {host})")
