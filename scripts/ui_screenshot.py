"""A screenshot of a flow run page in the Prefect UI, taken with headless Chromium.

    .venv/bin/python scripts/ui_screenshot.py [--out docs/flow-run-task-runs.png]
                                              [--api-url URL]

Chromium is not a dependency of the project (on Debian: ``apt-get install -y chromium``).
The script starts a Prefect server (tests/support/prefect_server.py; or uses ``--api-url``,
whose UI must be configured to call that URL), runs ``taskfactory run`` on a mix with
accepted and rejected candidates — the built-in ``files`` ecosystem and the ``faults``
fixture ecosystem of the tests, repair off, on the local backend — and shoots the flow
run page's Task Runs tab: the run's timeline, then every candidate with its state
(``Accepted`` or ``Rejected``) and its ``ecosystem:`` and ``outcome:`` tags.  It prints
the page's URL and, read from the API, the state of each task run the page should show.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

RUN = ["--tasks", "8", "--seed", "1", "--backend", "local", "--no-repair",
       "--ecosystem", "files,tests/fixtures/ecosystems/faults"]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise SystemExit("no Chromium found; on Debian: apt-get install -y chromium")


def mixed_run(api_url: str, data: Path) -> str:
    """Run the factory on the mix; returns the flow run id."""
    from tasks.dataset.query import run_query

    proc = subprocess.run([sys.executable, "-m", "flows.cli", "run", *RUN, "--data", str(data)],
                          cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PREFECT_API_URL": api_url})
    if proc.returncode != 0:
        raise SystemExit(f"taskfactory run failed:\n{proc.stderr[-3000:]}")
    return run_query(data, "select flow_run_id from runs")[1][0][0]


def expected(api_url: str, flow_run_id: str) -> list[str]:
    """What the page should show: each task run's name, state and tags, from the API."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with SyncPrefectClient(api_url) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
            id=FlowRunFilterId(any_=[flow_run_id])))
    return [f"{r.name}: {r.state.name} {sorted(r.tags)}"
            for r in sorted(runs, key=lambda r: r.name)]


def shoot(url: str, out: Path, width: int, height: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile every time
        proc = subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "--virtual-time-budget=20000",
             f"--screenshot={out}", url], capture_output=True, text=True, timeout=180)
    if proc.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        raise SystemExit(f"chromium wrote no screenshot:\n{proc.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "flow-run-task-runs.png")
    ap.add_argument("--api-url", help="a running Prefect server (default: start one)")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.api_url:
            take(args, args.api_url, Path(tmp))
            return
        from tests.support.prefect_server import prefect_server

        with prefect_server(Path(tmp) / "prefect") as api_url:
            take(args, api_url, Path(tmp))


def take(args: argparse.Namespace, api_url: str, tmp: Path) -> None:
    flow_run_id = mixed_run(api_url, tmp / "data")
    url = f"{api_url.removesuffix('/api')}/v2/runs/flow-run/{flow_run_id}?tab=TaskRuns"
    shoot(url, args.out, args.width, args.height)
    print(f"{args.out}: {url}")
    print("\n".join(expected(api_url, flow_run_id)))


if __name__ == "__main__":
    main()
