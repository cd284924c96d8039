"""The built-in ``git`` ecosystem: seed determinism and realism, the probe's time
independence, and sampler behaviour on a real seeded repository.

The repository is built with the host's git (the local backend needs it too); tests that
need it are skipped when git is missing.
"""

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from environments.ecosystems import load_ecosystem
from schemas.ecosystem import type_satisfies
from tests.support.probes import run_probe

GIT = load_ecosystem("git")
SEED = 11
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _stream_commits(stream: bytes) -> list[dict]:
    """Commits of a fast-import stream (ref, author line, merge or not), data blocks skipped."""
    out: list[dict] = []
    pos = 0
    while pos < len(stream):
        end = stream.index(b"\n", pos)
        line = stream[pos:end].decode()
        pos = end + 1
        if line.startswith("data "):
            pos += int(line[5:])
        elif line.startswith("commit "):
            out.append({"ref": line[7:], "author": "", "merge": False})
        elif line.startswith("author ") and out:
            out[-1]["author"] = line[7:]
        elif line.startswith("merge ") and out:
            out[-1]["merge"] = True
    return out


def _run(cwd: Path, *argv: str, env: dict | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    return done.stdout


def build_repo(path: Path, seed: int = SEED) -> Path:
    """The seeded workspace with the ecosystem's setup applied, like a sandbox has it."""
    path.mkdir(parents=True, exist_ok=True)
    for rel, data in GIT.seed_state(seed).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(path)}
    subprocess.run(["bash", "-c", GIT.spec.setup], cwd=path, check=True, env={**os.environ,
                                                                               **env})
    return path


def probe(path: Path) -> dict:
    return run_probe(GIT, path)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return build_repo(tmp_path_factory.mktemp("git") / "ws")


@pytest.fixture(scope="module")
def state(repo) -> dict:
    return probe(repo)


# ---- spec and seed -----------------------------------------------------------------------------
def test_spec_loads_with_enough_typed_tools():
    tools = GIT.spec.tools
    assert len(tools) >= 10
    assert {"branches", "tags", "commits"} == set(GIT.spec.probe_sections)
    assert not GIT.spec.probe_sections["commits"].strict
    joins = [t for t in tools if sum(p.typed for p in t.params) >= 2]
    assert {t.name for t in joins} >= {"merge_into", "diff_files"}
    for t in tools:
        if t.effect == "write":
            assert type_satisfies(t.returns.type, "git.ref")
            assert t.returns.from_param and t.returns.label


def test_same_seed_same_bytes_different_seed_different_bytes():
    assert GIT.seed_state(42) == GIT.seed_state(42)
    assert GIT.seed_state(42) != GIT.seed_state(43)
    assert sorted(GIT.seed_state(42)) == GIT.state_paths(42)


def test_seeding_in_threads_gives_the_same_bytes():
    """Candidates are realized in worker threads; the shared Faker must not interleave."""
    from concurrent.futures import ThreadPoolExecutor

    expected = {s: GIT.seed_state(s) for s in range(8)}
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(GIT.seed_state, list(range(8)) * 4))
    assert all(g == expected[i % 8] for i, g in enumerate(got))


@pytest.mark.parametrize("seed", range(12))
def test_seeded_history_is_realistic(seed):
    raw = GIT.seed_state(seed)[".seed/history.fi"]
    commits = _stream_commits(raw)
    stream = raw.decode()
    assert 15 <= len(commits) <= 40
    authors = {re.sub(r" \d+ [+-]\d{4}$", "", c["author"]) for c in commits}
    assert 3 <= len(authors) <= 6 and all("@" in a for a in authors)
    refs = {c["ref"] for c in commits}
    assert "refs/heads/main" in refs and len(refs) >= 3
    assert len({c["author"].split(" <")[0] for c in commits}) == len(authors)  # unique names
    assert any(c["merge"] for c in commits)
    assert re.search(r"^(reset refs/tags/|tag )v\d+\.\d+\.\d+$", stream, re.M)


# ---- the real repository and the probe -----------------------------------------------------------
def test_setup_builds_the_seeded_repository(repo, state):
    assert _run(repo, "git", "status", "--porcelain") == ""
    assert _run(repo, "git", "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert _run(repo, "git", "config", "user.email").strip() == "agent@example.com"
    assert not (repo / ".seed").exists()
    assert set(state) == {"branches", "tags", "commits"}
    assert "main" in state["branches"] and state["tags"]
    assert all(not c.startswith("new:") for c in state["commits"])  # all seeded


def test_seeded_hashes_are_the_same_on_every_build(tmp_path, state):
    again = probe(build_repo(tmp_path / "again"))
    assert json.dumps(again, sort_keys=True) == json.dumps(state, sort_keys=True)


@needs_git
def test_new_commits_are_identified_by_content_not_time(tmp_path, state):
    """The same cherry-pick made at different dates yields the same probe output."""
    repo = _Picker(state)
    outputs = []
    for i, date in enumerate(["2030-01-01T00:00:00", "2031-06-15T12:34:56"]):
        ws = build_repo(tmp_path / f"ws{i}")
        env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
        _run(ws, "git", "switch", "-q", "-c", "work/topic", repo.base)
        _run(ws, "git", "cherry-pick", repo.commit, env=env)
        outputs.append(probe(ws))
    assert outputs[0] == outputs[1]
    tip = outputs[0]["branches"]["work/topic"]
    assert tip.startswith("new:")
    entry = outputs[0]["commits"][tip]
    picked = state["commits"][next(c for c in state["commits"] if c.startswith(repo.commit))]
    assert entry["subject"] == picked["subject"] and entry["author"] == picked["author"]


COMMITTING = ("cherry_pick", "fork_with_pick", "backport_branch", "revert_commit",
              "fork_with_revert", "hotfix_branch")
"""The tools whose commit (and the stderr line naming its hash) git makes with its own
message and, unless they date it, the clock's time."""


@needs_git
@pytest.mark.parametrize("name", COMMITTING)
def test_a_tool_made_commit_has_the_same_hash_whenever_it_is_made(tmp_path, state, name):
    """The tool's command run at two different times (the dates git would take from the
    clock given in the environment instead) makes the same commit and prints the same
    stderr, so a step's recorded output is the same on every run."""
    from tasks.core.commands import render_command

    tool, repo = GIT.spec.tool(name), _Picker(state)
    fresh = {"name": "work/new", "base": repo.base}
    args = {p.name: fresh.get(p.name, repo.commit if p.name == "commit" else "work/topic")
            for p in tool.params}
    if name in ("revert_commit", "fork_with_revert", "hotfix_branch"):
        args["commit"] = GIT.sample("revertible", state, random.Random(3), base=repo.base)
    made = []
    for i, date in enumerate(["2030-01-01T00:00:00+0000", "2031-06-15T12:34:56+0000"]):
        ws = build_repo(tmp_path / f"ws{i}")
        _run(ws, "git", "branch", "work/topic", repo.base)
        env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
        done = subprocess.run(["bash", "-c", render_command(tool, args)], cwd=ws, env={
            **os.environ, **env}, capture_output=True, text=True, check=True)
        branch = args.get("name", args.get("branch"))
        made.append((_run(ws, "git", "rev-parse", branch), done.stderr))
    assert made[0] == made[1]
    assert made[0][1].strip()  # git named the commit it made: the line compared


@needs_git
def test_lightweight_tag_on_an_annotated_tag_reads_as_lightweight(tmp_path):
    """``git tag t v1`` (a ref to v1's tag object) and ``git tag t v1^{commit}`` are the
    same lightweight tag to the probe; a real annotated tag keeps its message."""
    seed = next(s for s in range(100)
                if re.search(rb"^tag v", GIT.seed_state(s)[".seed/history.fi"], re.M))
    state = probe(build_repo(tmp_path / "seeded", seed))
    annotated = sorted(n for n, t in state["tags"].items() if t["annotation"])
    outputs = []
    for i, target in enumerate([annotated[0], f"{annotated[0]}^{{commit}}"]):
        ws = build_repo(tmp_path / f"ws{i}", seed)
        _run(ws, "git", "tag", "light", target)
        _run(ws, "git", "tag", "-a", "-m", "Candidate build: x", "heavy", annotated[0])
        outputs.append(probe(ws)["tags"])
    assert outputs[0] == outputs[1]
    commit = state["tags"][annotated[0]]["commit"]
    assert outputs[0]["light"] == {"commit": commit, "annotation": None}
    assert outputs[0]["heavy"] == {"commit": commit, "annotation": "Candidate build: x"}


class _Picker:
    """A base and a commit that cherry-picks cleanly onto it, via the sampler."""

    def __init__(self, state: dict) -> None:
        rng = random.Random(3)
        self.base = GIT.sample("start_ref", state, rng)
        self.commit = GIT.sample("pickable", state, rng, base=self.base)


# ---- samplers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(6))
def test_pickable_and_revertible_apply_cleanly(tmp_path, state, n):
    rng = random.Random(n)
    ws = build_repo(tmp_path / "ws")
    base = GIT.sample("start_ref", state, rng)
    _run(ws, "git", "switch", "-q", "-c", "work/topic", base)
    pick = GIT.sample("pickable", state, rng, base=base)
    assert not _run(ws, "git", "branch", "--contains", pick, "work/topic").strip()
    _run(ws, "git", "cherry-pick", pick)  # raises on a conflict
    now = probe(ws)
    undo = GIT.sample("revertible", now, rng, branch="work/topic")
    _run(ws, "git", "revert", "--no-edit", undo)
    assert _run(ws, "git", "status", "--porcelain") == ""


def test_samplers_pick_literals_that_exist(repo, state):
    rng = random.Random(5)
    for _ in range(10):
        ref = GIT.sample("any_ref", state, rng)
        _run(repo, "git", "rev-parse", "--verify", f"{ref}^{{commit}}")
        path = GIT.sample("ref_path", state, rng, ref=ref)
        lines = len(_run(repo, "git", "show", f"{ref}:{path}").splitlines())
        assert 1 <= int(GIT.sample("line_number", state, rng, ref=ref, path=path)) <= lines
        email = GIT.sample("author", state, rng, ref=ref)
        count = int(_run(repo, "git", "rev-list", "--count", "-F", f"--author=<{email}>", ref))
        assert 0 < count <= int(_run(repo, "git", "rev-list", "--count", ref))
        word = GIT.sample("word", state, rng)
        assert not re.fullmatch(r"[0-9a-f]+", word.lower())
        assert _run(repo, "git", "log", "--all", "--format=%s", "-F", f"--grep={word}").strip()
        commit = GIT.sample("plain_commit", state, rng)
        assert _run(repo, "git", "diff-tree", "--no-commit-id", "--name-only", "-r", commit)


def test_start_refs_diverge_from_refs_the_task_made(tmp_path, state):
    ws = build_repo(tmp_path / "ws")
    rng = random.Random(1)
    first = GIT.sample("start_ref", state, rng)
    _run(ws, "git", "branch", "work/topic", first)
    second = GIT.sample("start_ref", probe(ws), rng)
    counts = _run(ws, "git", "rev-list", "--left-right", "--count", f"{first}...{second}")
    assert "0" not in counts.split()


def test_rewind_steps_and_diff_base_move_somewhere_else(tmp_path, state):
    ws = build_repo(tmp_path / "ws")
    _run(ws, "git", "branch", "work/topic", "main")
    now = probe(ws)
    rng = random.Random(2)
    for _ in range(10):
        steps = int(GIT.sample("rewind_steps", now, rng, branch="work/topic"))
        assert 1 <= steps <= 3
        _run(ws, "git", "rev-parse", "--verify", f"main~{steps + 1}")  # never the root
    base = GIT.sample("diff_base", now, rng, ref="main")
    assert _run(ws, "git", "diff", "--name-only", base, "main").strip()


def test_twin_commits_are_never_proposed(tmp_path, state):
    """A second cherry-pick of the same commit onto the same tip would make a commit whose
    hash (and so every count over it) depends on the clock's second: not offered."""
    ws = build_repo(tmp_path / "ws")
    rng = random.Random(4)
    base = GIT.sample("start_ref", state, rng)
    _run(ws, "git", "switch", "-q", "-c", "a", base)
    pick = GIT.sample("pickable", state, rng, base=base)
    _run(ws, "git", "cherry-pick", pick)
    _run(ws, "git", "switch", "-q", "main")
    now = probe(ws)
    for seed in range(20):
        try:
            other = GIT.sample("pickable", now, random.Random(seed), base=base)
        except LookupError:
            continue
        assert not other.startswith(pick[:12])


def test_samplers_raise_lookup_error_when_nothing_fits():
    empty = {"branches": {"main": "a" * 40}, "tags": {},
             "commits": {"a" * 40: {"author": "A <a@x>", "subject": "Initial commit",
                                    "parents": [], "tree": "t", "changes": {}}}}
    rng = random.Random(0)
    for facet, context in [("start_ref", {}), ("pickable", {"branch": "main"}),
                           ("revertible", {"branch": "main"}), ("rewind_steps", {"branch": "main"}),
                           ("plain_commit", {}), ("word", {}), ("branch_path", {"branch": "main"})]:
        with pytest.raises(LookupError):
            GIT.sample(facet, empty, rng, **context)


def test_a_commit_is_never_reverted_on_a_branch_started_at_it(state):
    """"A new branch at that commit, with a revert of that commit on top" is a branch at
    its parent said the long way; from a branch, its tip may still be reverted."""
    commits = state["commits"]
    branch, tip = next((b, c) for b, c in sorted(state["branches"].items())
                       if len(commits[c]["parents"]) == 1
                       and not commits[c]["subject"].startswith("Release "))
    assert all(not GIT.sample("revertible", state, random.Random(n), base=tip[:12])
               .startswith(tip[:12]) for n in range(40))
    assert any(GIT.sample("revertible", state, random.Random(n), base=branch)
               .startswith(tip[:12]) for n in range(200))
