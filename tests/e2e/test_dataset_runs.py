"""Several real runs into one dataset: queryable as one, idempotent, deduplicated."""

import hashlib
import json

import yaml

from tasks.trajectories.render import ACTION_SPACES, SUPERVISIONS

RUN = ["--tasks", 8, "--backend", "local", "--ecosystem", "files,sql"]
TABLES = ["tasks", "trajectories", "steps", "attempts", "runs"]


def query(cli, data, sql):
    proc = cli("query", sql, "--data", data, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def counts(cli, data):
    sql = "select " + ", ".join(f"(select count(*) from {t}) as {t}" for t in TABLES)
    return query(cli, data, sql)[0]


def files(data):
    return {str(p.relative_to(data)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(data.rglob("*")) if p.is_file() and p.name != ".lock"}


def test_three_runs_are_one_dataset_and_a_repeated_run_adds_zero_rows(cli, tmp_path):
    data = tmp_path / "d"
    for seed in (1, 2, 3):
        proc = cli("run", *RUN, "--seed", seed, "--data", data)
        assert proc.returncode == 0, proc.stderr
    c = counts(cli, data)
    assert c["attempts"] == 24 and c["runs"] == 3
    per_run = query(cli, data, "select run_id, count(*) as n, count(distinct "
                               "provenance.config_hash) as configs from attempts group by 1")
    assert sorted(r["n"] for r in per_run) == [8, 8, 8]
    assert all(r["configs"] == 1 for r in per_run)
    accepted = query(cli, data, "select count(*) as n from attempts where status = 'accepted'")
    assert c["tasks"] == accepted[0]["n"] >= 18
    per_task = len(ACTION_SPACES) * len(SUPERVISIONS)  # one trajectory per space and mode
    assert c["trajectories"] == per_task * c["tasks"]
    missing = query(cli, data, "select count(*) as n from tasks t, attempts a where "
                               "a.task_id = t.task_id and t.provenance is null")
    assert missing == [{"n": 0}]
    nulls = query(cli, data, " union all ".join(
        f"select count(*) as n from {t} where provenance.run_id is null or "
        f"provenance.generator_version is null or provenance.config_hash is null or "
        f"provenance.template_hash is null or provenance.created_at is null" for t in TABLES))
    assert [r["n"] for r in nulls] == [0] * 5

    before = files(data)
    repeat = cli("run", *RUN, "--seed", 2, "--data", data)
    assert repeat.returncode == 0, repeat.stderr
    assert "nothing to do: all 8 candidates" in repeat.stdout
    assert counts(cli, data) == c
    assert files(data) == before  # not a byte written

    # more candidates of the same config: only the new ones run
    more = cli("run", *RUN[2:], "--tasks", 12, "--seed", 1, "--data", data)
    assert more.returncode == 0, more.stderr
    assert "8 already in the dataset, skipped" in more.stdout
    counts_before_other = counts(cli, data)
    assert counts_before_other["attempts"] == 28

    # another config with the same candidates: identical tasks are rejected as duplicates
    other = cli("run", *RUN, "--seed", 3, "--max-repairs", 1, "--data", data)
    assert other.returncode == 0, other.stderr
    run_id = other.stdout.split()[1].rstrip(":")
    after = counts(cli, data)
    assert after["attempts"] == 36
    new = query(cli, data, f"select count(*) filter (status = 'accepted') as accepted, "
                           f"count(*) filter (stage = 'dedup') as dups from attempts "
                           f"where run_id = '{run_id}'")[0]
    added = query(cli, data, f"select count(*) as n from tasks where run_id = '{run_id}'")[0]
    assert added["n"] == new["accepted"] == after["tasks"] - counts_before_other["tasks"]
    dups = query(cli, data, f"select reason, count(*) as n from attempts where stage = 'dedup' "
                            f"and run_id = '{run_id}' group by 1")
    assert sum(d["n"] for d in dups) == new["dups"]
    assert {d["reason"] for d in dups} <= {"duplicate_task", "duplicate_structure",
                                            "near_duplicate_instruction"}
    assert any(d["reason"] == "duplicate_task" and d["n"] >= 5 for d in dups), dups

    stats = cli("stats", "--data", data)
    assert stats.returncode == 0, stats.stderr
    assert "| dedup | duplicate_task |" in stats.stdout
    card = (data / "README.md").read_text()
    assert yaml.safe_load(card.split("---")[1])["configs"]
    assert f"| attempts | {after['attempts']} |" in card
    assert all((data / "plots" / n).stat().st_size > 1000 for n in
               ("depth.png", "steps.png", "yield.png", "tokens.png"))
