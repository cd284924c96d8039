"""The ``git`` ecosystem in real containers: the pipeline accepts its candidates, and each
tool, run by hand on a seeded repository, does exactly what its spec says.

Expectations are computed independently of the tool's own command: from the probe's
commit graph (ancestry, first-parent changes) or with a different git command.
"""

import importlib.util
import os
import random

import pytest

from environments.docker.config import DockerConfig
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run, provider_for
from tasks.core.commands import render_command, render_shell
from tasks.execute.realize import probe, realize
from tasks.plan.planner import plan_candidates

pytestmark = pytest.mark.docker

RUN_ID = f"itest-eco-git-{os.getpid()}"  # unique: other checkouts may share the engine
ECO = ecosystem("git")
SEED = 5
AGENT = "Agent <agent@example.com>"

_spec = importlib.util.spec_from_file_location("git_samplers", ECO.folder / "samplers.py")
samplers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(samplers)


def test_pipeline_accepts_most_candidates():
    candidates, _ = plan_candidates(ECO, 15, run_seed=21)
    try:
        outcomes = [build_candidate(c, "git", DockerConfig(), RUN_ID) for c in candidates]
    finally:
        close_run(RUN_ID)
    accepted = [o for o in outcomes if o.task]
    assert len(accepted) >= 12, [(o.attempt.stage, o.attempt.reason, o.attempt.detail)
                                 for o in outcomes if not o.task]
    for o in accepted:
        gate = o.task.gate
        assert gate.baseline_reward == 0.0 and gate.reference_reward == 1.0
        assert gate.reference_checks_passed == gate.checks_total > 0


# ---- each tool by hand ------------------------------------------------------------------
class Repo:
    """One sandbox with the seeded repository; ``reset()`` restores the initial state."""

    def __init__(self, sandbox) -> None:
        self.sb = sandbox
        _, self.initial = realize(sandbox, ECO, SEED)
        self.rng = random.Random(0)

    def reset(self) -> dict:
        self.sb.restore(self.initial)
        return self.state()

    def state(self) -> dict:
        return probe(self.sb, ECO)

    def graph(self) -> "samplers._Repo":
        return samplers._Repo(self.state())

    def sample(self, facet: str, **context: str) -> str:
        return ECO.sample(facet, self.state(), self.rng, **context)

    def tool(self, tool: str, /, **args: str) -> str:
        command = render_command(ECO.spec.tool(tool), {k: str(v) for k, v in args.items()})
        done = self.sb.exec(["bash", "-c", command], timeout=30)
        assert done.exit_code == 0, (command, done.stderr)
        return done.stdout

    def git(self, *argv: str, ok: bool = True) -> str:
        done = self.sb.exec(["git", *argv], timeout=30)
        if ok:
            assert done.exit_code == 0, (argv, done.stderr)
        return done.stdout if done.exit_code == 0 else ""

    def clean_on_main(self) -> None:
        assert self.git("status", "--porcelain") == ""
        assert self.git("symbolic-ref", "--short", "HEAD").strip() == "main"


@pytest.fixture(scope="module")
def repo():
    with provider_for(DockerConfig(), RUN_ID).sandbox() as sb:
        yield Repo(sb)
    close_run(RUN_ID)


def _tip(repo: Repo, branch: str) -> dict:
    state = repo.state()
    return state["commits"][state["branches"][branch]]


def test_create_branch_and_tags(repo):
    g = samplers._Repo(repo.reset())
    start = repo.sample("start_ref")
    repo.tool("create_branch", name="work/topic", start=start)
    repo.tool("create_tag", name="checkpoint", ref="v0.2.0")
    repo.tool("tag_annotated", ref="work/topic", name="rc", message="Candidate build: one")
    repo.tool("tag_snapshot", name="snapshot", ref="v0.2.0", message="Candidate build: two")
    after = repo.state()
    assert after["branches"]["work/topic"] == g.resolve(start)
    assert after["tags"]["checkpoint"] == {"commit": g.tags["v0.2.0"], "annotation": None}
    assert after["tags"]["rc"] == {"commit": g.resolve(start),
                                   "annotation": "Candidate build: one"}
    assert after["tags"]["snapshot"] == {"commit": g.tags["v0.2.0"],
                                         "annotation": "Candidate build: two"}
    repo.clean_on_main()


def test_probe_peels_tags_of_tags_to_their_commit(repo):
    g = samplers._Repo(repo.reset())
    repo.tool("tag_annotated", ref="v0.2.0", name="outer", message="Wraps a tag")
    repo.tool("tag_annotated", ref="outer", name="outermost", message="Wraps it again")
    repo.tool("create_tag", name="light", ref="outermost")
    tags = repo.state()["tags"]
    commit = g.tags["v0.2.0"]
    assert repo.git("rev-parse", "outermost^{commit}").strip() == commit
    assert tags["outer"] == {"commit": commit, "annotation": "Wraps a tag"}
    assert tags["outermost"] == {"commit": commit, "annotation": "Wraps it again"}
    assert tags["light"] == {"commit": commit, "annotation": None}


def test_seeded_history_is_one_pack(repo):
    repo.reset()
    counts = dict(line.split(": ") for line in repo.git("count-objects", "-v").splitlines())
    assert counts["count"] == "0" and counts["packs"] == "1", counts


def _on_new_branch(repo, tool: str, facet: str, name: str):
    """Run ``tool`` with a commit the ``facet`` sampler draws, onto new branch ``name`` off
    main; returns the repo as it was, the commit, its record then, and the new tip."""
    g = samplers._Repo(repo.reset())
    commit = repo.sample(facet, base="main")
    repo.tool(tool, name=name, base="main", commit=commit)
    return g, commit, g.commits[g.resolve(commit)], _tip(repo, name)


@pytest.mark.parametrize("tool", ["backport_branch", "fork_with_pick"])
def test_cherry_pick_onto_a_new_branch(repo, tool):
    g, commit, picked, tip = _on_new_branch(repo, tool, "pickable", "pick/x")
    assert tip["parents"] == [g.branches["main"]]
    assert (tip["subject"], tip["author"]) == (picked["subject"], picked["author"])
    assert tip["changes"] == picked["changes"]
    repo.clean_on_main()


@pytest.mark.parametrize("tool", ["hotfix_branch", "fork_with_revert"])
def test_revert_on_a_new_branch_and_on_an_existing_one(repo, tool):
    g, commit, original, tip = _on_new_branch(repo, tool, "revertible", "revert/x")
    assert tip["subject"] == f'Revert "{original["subject"]}"' and tip["author"] == AGENT
    assert repo.git("diff", "--name-only", f"{commit}~1", "revert/x", "--",
                    *original["changes"]) == ""  # the touched paths are back as before
    repo.tool("create_branch", name="work/b", start="main")
    again = repo.sample("revertible", branch="work/b")
    repo.tool("revert_commit", branch="work/b", commit=again)
    assert _tip(repo, "work/b")["parents"] == [g.branches["main"]]
    repo.clean_on_main()


def test_cherry_pick_onto_an_existing_branch(repo):
    g = samplers._Repo(repo.reset())
    repo.tool("create_branch", name="work/topic", start="main")
    commit = repo.sample("pickable", branch="work/topic")
    repo.tool("cherry_pick", branch="work/topic", commit=commit)
    tip = _tip(repo, "work/topic")
    assert tip["parents"] == [g.branches["main"]]
    assert tip["subject"] == g.commits[g.resolve(commit)]["subject"]
    repo.clean_on_main()


def test_commit_append_and_remove(repo):
    g = samplers._Repo(repo.reset())
    repo.tool("create_branch", name="work/topic", start="main")
    path = repo.sample("branch_path", branch="work/topic")
    repo.tool("commit_append", branch="work/topic", path=path, text="A new line.",
              message="Note a new line")
    assert repo.git("show", f"work/topic:{path}").splitlines()[-1] == "A new line."
    tip = _tip(repo, "work/topic")
    assert (tip["subject"], tip["author"], list(tip["changes"])) == \
        ("Note a new line", AGENT, [path])
    lines = len(repo.git("show", f"work/topic:{path}").splitlines())
    assert repo.tool("blame_author", ref="work/topic", path=path, line=lines).strip() == "Agent"
    repo.tool("commit_remove", branch="work/topic", path=path, message=f"Remove {path}")
    assert repo.git("cat-file", "-e", f"work/topic:{path}", ok=False) == ""
    assert _tip(repo, "work/topic")["changes"] == {path: None}
    assert g.branches["main"] == repo.state()["branches"]["main"]
    repo.clean_on_main()


def test_merge_into_and_rewind_branch(repo):
    g = samplers._Repo(repo.reset())
    side = next(n for n in sorted(g.branches) if n != "main"
                and g.branches[n] not in g.ancestors(g.branches["main"]))
    repo.tool("create_branch", name="work/a", start=side)
    repo.tool("create_branch", name="work/b", start="main")
    repo.tool("merge_into", source="work/a", target="work/b")
    tip = _tip(repo, "work/b")
    assert tip["parents"] == [g.branches["main"], g.branches[side]]
    assert tip["subject"] == "Merge branch 'work/a' into work/b" and tip["author"] == AGENT
    done = repo.sb.exec(["bash", "-c", render_command(ECO.spec.tool("merge_into"),
                                                      {"source": "work/a", "target": "work/b"})])
    assert done.exit_code != 0 and "already merged" in done.stderr
    steps = int(repo.sample("rewind_steps", branch="work/b"))
    repo.tool("rewind_branch", branch="work/b", steps=steps)
    assert repo.state()["branches"]["work/b"] == g.first_parents(g.branches["main"])[steps - 1]
    repo.clean_on_main()


def test_read_tools_on_the_seeded_history(repo):
    g = samplers._Repo(repo.reset())
    main = g.branches["main"]
    history = g.ancestors(main)
    assert int(repo.tool("count_commits", ref="main")) == len(history)

    email = repo.sample("author", ref="main")
    mine = [c for c in history if g.commits[c]["author"].endswith(f"<{email}>")]
    assert int(repo.tool("count_author_commits", ref="main", author=email)) == len(mine)

    commit = repo.sample("plain_commit")
    entry = g.commits[g.resolve(commit)]
    assert repo.tool("commit_files", commit=commit).splitlines() == sorted(entry["changes"])
    assert repo.tool("commit_author", commit=commit).strip() == entry["author"]

    tip = g.commits[main]
    assert repo.tool("tip_subject", ref="main").strip() == tip["subject"]
    assert repo.tool("tip_files", ref="main").splitlines() == sorted(tip["changes"])

    path = repo.sample("ref_path", ref="main")
    touching = [c for c in history if path in g.commits[c]["changes"]]
    subjects = repo.tool("path_subjects", ref="main", path=path).splitlines()
    assert subjects == sorted(subjects) and subjects
    assert set(subjects) <= {g.commits[c]["subject"] for c in touching}
    names = repo.tool("path_authors", ref="main", path=path).splitlines()
    assert names == sorted(set(names)) and names
    assert set(names) <= {g.commits[c]["author"].split(" <")[0] for c in touching}

    root = next(c for c in history if not g.commits[c]["parents"])
    root_author = g.commits[root]["author"].split(" <")[0]
    assert repo.tool("blame_author", ref="main", path="README.md", line=1).strip() == root_author

    word = repo.sample("word")
    found = repo.tool("grep_subjects", text=word).splitlines()
    assert found == sorted(set(found))
    assert {c["subject"] for c in g.commits.values() if word in c["subject"]} <= set(found)


def test_read_tools_that_compare_two_refs(repo):
    g = samplers._Repo(repo.reset())
    side = next(n for n in sorted(g.branches) if n != "main"
                and g.branches[n] not in g.ancestors(g.branches["main"]))
    left, right = g.branches[side], g.branches["main"]
    a, b = g.ancestors(left), g.ancestors(right)
    assert repo.tool("ahead_behind", left=side, right="main").strip() == \
        f"{len(a - b)} {len(b - a)}"
    common = a & b
    best = [c for c in common if not any(c in g.ancestors(o) and o != c for o in common)]
    assert repo.tool("merge_base_subject", left=side, right="main").strip() == \
        g.commits[best[0]]["subject"]
    fa, fb = g.files(right), g.files(left)
    differ = sorted(p for p in set(fa) | set(fb) if fa.get(p) != fb.get(p))
    assert repo.tool("diff_files", base="main", target=side).splitlines() == differ
    base = repo.sample("diff_base", ref=side)
    files, added, deleted = map(int, repo.tool("diff_stat", ref=side, base=base).split())
    shortstat = repo.git("diff", "--shortstat", base, side)
    assert f"{files} file" in shortstat and files > 0
    assert (f"{added} insertion" in shortstat) == (added > 0)
    assert (f"{deleted} deletion" in shortstat) == (deleted > 0)


# ---- chained lookups ----------------------------------------------------------------------
def _check(repo: Repo, tool: str, **args: str) -> int:
    """The exit status of ``tool``'s ambiguity check with these arguments."""
    check = ECO.spec.tool(tool).ambiguity_check
    assert check
    return repo.sb.exec(["bash", "-c", render_shell(check, args)], timeout=30).exit_code


def _version(tag: str) -> tuple[int, ...]:
    return tuple(int(n) for n in tag[1:].split("."))


def test_newest_commit_touching_on_branches_and_tags(repo):
    g = samplers._Repo(repo.reset())
    refs = sorted(g.branches) + sorted(g.tags)
    for ref in refs:
        tip = g.resolve(ref)
        path = repo.sample("ref_path", ref=ref)
        # the seeded merges take their branch's files as they are (the branch commit is the
        # change git log shows), so the newest plain commit touching the path is the answer
        touching = [c for c in g.touching(tip, path) if g.plain(c) or not g.commits[c]["parents"]]
        when = {c: int(repo.git("show", "-s", "--format=%ct", c)) for c in touching}
        expected = max(touching, key=lambda c: when[c])
        assert repo.tool("newest_commit_touching", ref=ref, path=path).strip() == expected[:12]
        assert _check(repo, "newest_commit_touching", ref=ref, path=path) == 0


def test_newest_commit_touching_refuses_a_tie(repo):
    repo.reset()
    repo.tool("create_branch", name="work/tie", start="main")
    same = "GIT_COMMITTER_DATE='2026-01-01T12:00:00+0000'"
    for line in ("one", "two"):
        done = repo.sb.exec(["bash", "-c", f"git switch -q work/tie && echo {line} >> README.md"
                             f" && {same} git commit -q -am {line} && git switch -q -"])
        assert done.exit_code == 0, done.stderr
    assert _check(repo, "newest_commit_touching", ref="work/tie", path="README.md") != 0
    assert _check(repo, "newest_commit_touching", ref="main", path="README.md") == 0


def test_latest_release_in_the_history_of_a_ref(repo):
    g = samplers._Repo(repo.reset())
    releases = {t: c for t, c in g.tags.items() if samplers.SEEDED_TAG.match(t)}
    refs = sorted(g.branches) + sorted(releases) + [c[:12] for c in g.seeded()]
    found = missing = 0
    for ref in refs:
        history = g.ancestors(g.resolve(ref))
        mine = [t for t, c in releases.items() if c in history]
        if not mine:
            assert _check(repo, "latest_release_in", ref=ref) != 0, ref
            missing += 1
            continue
        assert _check(repo, "latest_release_in", ref=ref) == 0
        assert repo.tool("latest_release_in", ref=ref).strip() == max(mine, key=_version), ref
        found += 1
    assert found and missing  # both cases were seen


def test_merge_into_a_branch_that_tracks_an_untracked_file(repo):
    """A branch whose commit adds a file the workspace holds untracked (as a stack's
    commit_file makes it): the merge must not need a checkout of that branch here."""
    g = samplers._Repo(repo.reset())
    side = next(n for n in sorted(g.branches) if n != "main"
                and g.branches[n] not in g.ancestors(g.branches["main"]))
    made = repo.sb.exec(["bash", "-c",
                         "mkdir -p logs && printf 'worker died\\n' > logs/app.log"
                         " && blob=$(git hash-object -w -- logs/app.log)"
                         " && export GIT_INDEX_FILE=$(mktemp -u) && git read-tree main"
                         " && git update-index --add --cacheinfo 100644 $blob logs/app.log"
                         " && git branch evidence/add $(git commit-tree $(git write-tree)"
                         " -p main -m 'Add evidence') && rm -f $GIT_INDEX_FILE"])
    assert made.exit_code == 0, made.stderr
    repo.tool("create_branch", name="work/a", start=side)
    base = repo.state()["branches"]["evidence/add"]
    repo.tool("merge_into", source="work/a", target="evidence/add")
    tip = _tip(repo, "evidence/add")
    assert tip["parents"] == [base, g.branches[side]]
    assert tip["subject"] == "Merge branch 'work/a' into evidence/add"
    assert repo.git("status", "--porcelain") == "?? logs/\n"
    assert repo.git("symbolic-ref", "--short", "HEAD").strip() == "main"
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1
