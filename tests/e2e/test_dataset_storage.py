"""A disk that fills up under a run: one line, exit 75, the run marked ``failed`` with the
reason, and ``--resume`` finishes it once there is room.

Nothing is faked: the dataset lives on a real 600 KiB tmpfs the test mounts
(:mod:`tests.support.small_disk`, root only), the run is the real CLI on the session's
Prefect server with the local backend, and the room is made by growing the tmpfs.
"""

import re

from tasks.dataset.query import run_query
from tasks.dataset.store.manifest import load_manifest
from tests.support.small_disk import remount, small_disk

RUN = ["--backend", "local", "--ecosystem", "files", "--tasks", 8, "--seed", 3,
       "--workers", 2, "--shard-rows", 1]


def test_a_full_disk_stops_the_run_in_one_line_and_resume_finishes_it(cli, tmp_path):
    with small_disk(tmp_path / "disk", "600k") as disk:
        data = disk / "data"
        proc = cli("run", *RUN, "--data", data)
        assert proc.returncode == 75, proc.stdout[-2000:] + proc.stderr[-3000:]
        *progress, line = proc.stderr.strip().splitlines()  # the error: the last line, alone
        assert all(re.match(r"\d+/8 done, ", p) for p in progress), progress
        assert line.startswith("taskfactory: error: cannot write ") and "No space left" in line
        assert f"taskfactory run --resume --data {data}" in line
        (entry,) = load_manifest(data).runs.values()
        assert entry.status == "failed" and "No space left on device" in (entry.reason or "")
        committed = run_query(data, "select count(*) from attempts")[1][0][0]
        assert committed < 8

        remount(disk, "size=32m")
        proc = cli("run", "--resume", "--data", data)
        assert proc.returncode == 0, proc.stderr[-3000:]
        entry = load_manifest(data).runs[next(iter(load_manifest(data).runs))]
        assert (entry.status, entry.reason, entry.resumes) == ("complete", None, 1)
        assert run_query(data, "select count(*), count(distinct candidate_id) from "
                               "attempts")[1] == [(8, 8)]
        assert not (data / ".space-reserve").exists()
