"""The flow in-process under the Prefect test harness: a table artifact summarizes the run
and a markdown artifact carries the dataset report."""

import asyncio
import json

from flows.factory import run_factory
from flows.settings import RunSettings


def test_run_summary_artifact(prefect_api_url, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    summary = run_factory(RunSettings(tasks=5, seed=3, data=tmp_path, backend="local"))
    assert summary.candidates == 5 and summary.accepted + sum(summary.rejected.values()) == 5

    async def latest(key="taskfactory-run-summary"):
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))

    tables = []
    for artifact in asyncio.run(latest()):
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        tables.append({row["metric"]: row["value"] for row in data})
    mine = [t for t in tables if t["run_id"] == summary.run_id]
    assert len(mine) == 1, "no run summary artifact for this run"
    assert mine[0]["accepted"] == str(summary.accepted)
    assert mine[0]["candidates"] == "5"

    reports = [a for a in asyncio.run(latest("taskfactory-dataset-report"))
               if summary.run_id in (a.description or "")]
    assert len(reports) == 1, "no dataset report artifact for this run"
    markdown = reports[0].data
    assert "## Yield per ecosystem" in markdown and "## Distributions" in markdown
    assert (tmp_path / "README.md").read_text().count("## Plots") == 1
