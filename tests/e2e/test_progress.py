"""A run reports progress: a line on stderr and a Prefect progress artifact at 100%."""

import asyncio
import io

from flows.run.progress import Progress


def test_progress_line_and_artifact(prefect_api_url):
    from prefect import flow
    from prefect.client.orchestration import get_client

    out = io.StringIO()

    @flow
    def report() -> Progress:
        progress = Progress(4, "run-p", stream=out, every_s=0.0)
        for accepted in (True, False, True, True):
            progress.done(accepted)
        progress.close()
        return progress

    progress = report()
    lines = out.getvalue().splitlines()
    # one line per item (every_s 0), then none at the close: it would say nothing new; a
    # beat line ("0/4 done") only when the artifact took a second to make
    assert [line.split("/")[0] for line in lines if not line.startswith("0/")] == \
        ["1", "2", "3", "4"], lines
    assert lines[-1].startswith("4/4 done, 3 accepted, 1 rejected, ")
    assert "accepted/min, ETA 0:00" in lines[-1]
    assert any(line.startswith("2/4 done, 1 accepted, 1 rejected") for line in lines)

    async def read():
        async with get_client() as client:
            return await client.read_artifacts()

    mine = [a for a in asyncio.run(read()) if a.id == progress.artifact]
    assert len(mine) == 1 and mine[0].type == "progress" and float(mine[0].data) == 100.0
