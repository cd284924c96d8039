"""Execution-time samplers for the ``git`` ecosystem.

Every sampler gets the current probe state (``sample.of`` is never set: the probe JSON of
probe.py, parsed), a seeded ``random.Random`` and the already-resolved arguments it asks
for with ``sample.with``, and returns one literal that exists in the repository right now
and makes the tool call meaningful:

- refs handed to tools are seeded ones only (``main``, ``feature/...``, ``v0.2.0``, or a
  12-digit abbreviation of a seeded commit hash) — new commits have no stable hash;
- commits to cherry-pick or revert are chosen so the operation applies cleanly (the
  touched paths are exactly as the operation's base expects) and changes something;
- counts, paths and lines are chosen so the answer is non-empty and not everything.

A sampler raises ``LookupError`` when the state offers no such literal.
"""

import random
import re
import threading

from faker import Faker

SEEDED_BRANCH = re.compile(r"^(main|feature/|fix/|docs/)")
SEEDED_TAG = re.compile(r"^v\d")
HEX = re.compile(r"^[0-9a-f]+$")
WORD = re.compile(r"[A-Za-z]{4,}")
ABBREV = 12
AGENT = "Agent <agent@example.com>"
_FAKE = Faker("en_US")  # one instance (creating one costs ~25 ms), reseeded per use
_FAKE_LOCK = threading.Lock()  # samplers run in the factory's worker threads


class _Repo:
    """The probe state as a commit graph: refs, ancestry and per-commit file maps."""

    def __init__(self, state: dict) -> None:
        self.commits: dict[str, dict] = state.get("commits", {})
        self.branches: dict[str, str] = state.get("branches", {})
        self.tags: dict[str, str] = {n: t["commit"] for n, t in state.get("tags", {}).items()}
        self._anc: dict[str, frozenset[str]] = {}
        self._files: dict[str, dict[str, str]] = {}

    # ---- refs ------------------------------------------------------------------------------
    def resolve(self, ref: str) -> str:
        ref = ref.strip()
        for prefix in ("refs/heads/", "refs/tags/"):
            ref = ref.removeprefix(prefix)
        if ref in self.branches:
            return self.branches[ref]
        if ref in self.tags:
            return self.tags[ref]
        if HEX.match(ref) and len(ref) >= 4:
            hits = [c for c in self.commits if c.startswith(ref)]
            if len(hits) == 1:
                return hits[0]
        raise LookupError(f"unknown ref {ref!r}")

    def seeded_refs(self) -> list[tuple[str, str]]:
        """(name, commit) for seeded branches and tags."""
        out = [(n, c) for n, c in self.branches.items() if SEEDED_BRANCH.match(n)]
        out += [(n, c) for n, c in self.tags.items() if SEEDED_TAG.match(n)]
        return sorted(out)

    def task_ref_commits(self) -> set[str]:
        """Commits that refs created during the task point at."""
        out = {c for n, c in self.branches.items() if not SEEDED_BRANCH.match(n)}
        return out | {c for n, c in self.tags.items() if not SEEDED_TAG.match(n)}

    # ---- commits ---------------------------------------------------------------------------
    def seeded(self) -> list[str]:
        return sorted(c for c in self.commits if not c.startswith("new:"))

    def plain(self, commit: str) -> bool:
        """A non-merge, non-root commit (it has one parent)."""
        return len(self.commits[commit]["parents"]) == 1

    def change(self, commit: str) -> bool:
        """A plain commit that changes the project, not a release (a version bump nobody
        cherry-picks or reverts to fix something)."""
        return self.plain(commit) and not self.commits[commit]["subject"].startswith("Release ")

    def ancestors(self, commit: str) -> frozenset[str]:
        """``commit`` and every commit reachable from it."""
        if commit in self._anc:
            return self._anc[commit]
        seen, stack = {commit}, [commit]
        while stack:
            for p in self.commits.get(stack.pop(), {}).get("parents", []):
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        self._anc[commit] = frozenset(seen)
        return self._anc[commit]

    def first_parents(self, commit: str) -> list[str]:
        chain = [commit]
        while self.commits[chain[-1]]["parents"]:
            chain.append(self.commits[chain[-1]]["parents"][0])
        return chain

    def files(self, commit: str) -> dict[str, str]:
        """path -> blob id of the tree of ``commit`` (replayed along first parents)."""
        if commit in self._files:
            return self._files[commit]
        chain = []
        c: str | None = commit
        while c is not None and c not in self._files:
            chain.append(c)
            parents = self.commits[c]["parents"]
            c = parents[0] if parents else None
        tree = dict(self._files[c]) if c is not None else {}
        for c in reversed(chain):
            for path, entry in self.commits[c]["changes"].items():
                if entry is None:
                    tree.pop(path, None)
                else:
                    tree[path] = entry["blob"]
            self._files[c] = dict(tree)
        return self._files[commit]

    def lines(self, commit: str, path: str) -> int:
        blob = self.files(commit)[path]
        for c in self.commits.values():
            entry = c["changes"].get(path)
            if entry and entry["blob"] == blob:
                return entry["lines"]
        raise LookupError(f"no line count for {path}")

    def touching(self, tip: str, path: str) -> list[str]:
        """Commits reachable from ``tip`` whose first-parent diff touches ``path``."""
        return sorted(c for c in self.ancestors(tip) if path in self.commits[c]["changes"])

    def exists_on(self, tip: str, subject: str, author: str) -> bool:
        """Whether some commit on top of ``tip`` already has this subject and author: making
        another would create a twin whose hash depends only on the clock's second."""
        return any(c["parents"] == [tip] and c["subject"] == subject and c["author"] == author
                   for c in self.commits.values())

    def name_for(self, commit: str, rng: random.Random) -> str:
        """A way to write ``commit`` for a tool: a seeded ref naming it, or its hash."""
        names = [n for n, c in self.seeded_refs() if c == commit]
        if names and rng.random() < 0.6:
            return rng.choice(names)
        return commit[:ABBREV]


def _target(repo: _Repo, context: dict[str, str], *names: str) -> str:
    for name in names:
        if context.get(name):
            return repo.resolve(context[name])
    raise LookupError(f"sampler needs one of {names}")


def _fake_text(rng: random.Random, make) -> str:
    """``make(faker)`` with the shared Faker reseeded from ``rng``, under the lock."""
    with _FAKE_LOCK:
        _FAKE.seed_instance(rng.getrandbits(32))
        return make(_FAKE)


# ---- refs for new branches and tags ---------------------------------------------------------
def start_ref(state: dict, rng: random.Random, **_: str) -> str:
    """A seeded commit to start a branch or tag at, written as a ref name or a hash.

    Prefers commits that are neither ancestors nor descendants of what refs made earlier
    in the task point at, so that later diffs and merges between them mean something."""
    repo = _Repo(state)
    commits = [c for c in repo.seeded() if repo.commits[c]["parents"]]
    if not commits:
        raise LookupError("no seeded commit besides the root")
    taken = repo.task_ref_commits()
    diverged = [c for c in commits if all(c not in repo.ancestors(t) and t not in
                                          repo.ancestors(c) for t in taken)]
    fresh = [c for c in commits if c not in taken]
    pool = diverged or fresh or commits
    named = sorted({c for _, c in repo.seeded_refs()} & set(pool))
    commit = rng.choice(named) if named and rng.random() < 0.5 else rng.choice(pool)
    return repo.name_for(commit, rng)


def any_ref(state: dict, rng: random.Random, **_: str) -> str:
    """A seeded ref to read from: a branch, a tag or a commit hash."""
    repo = _Repo(state)
    commits = [c for c in repo.seeded() if repo.commits[c]["parents"]]
    if not commits:
        raise LookupError("no seeded commit besides the root")
    if rng.random() < 0.6 and repo.seeded_refs():
        return rng.choice(repo.seeded_refs())[0]
    return rng.choice(commits)[:ABBREV]


def plain_commit(state: dict, rng: random.Random, **_: str) -> str:
    """A seeded commit with exactly one parent, as a 12-digit hash."""
    repo = _Repo(state)
    commits = [c for c in repo.seeded() if repo.plain(c)]
    if not commits:
        raise LookupError("no seeded non-merge commit")
    return rng.choice(commits)[:ABBREV]


# ---- commits that apply cleanly -------------------------------------------------------------
def pickable(state: dict, rng: random.Random, **context: str) -> str:
    """A seeded change (:meth:`_Repo.change`) not yet on the target (``branch`` or
    ``base``) that cherry-picks cleanly onto it: every path it touches is on the target
    exactly as in its parent."""
    repo = _Repo(state)
    tip = _target(repo, context, "branch", "base")
    have = repo.files(tip)
    out = []
    for c in repo.seeded():
        if not repo.change(c) or c in repo.ancestors(tip):
            continue
        before = repo.files(repo.commits[c]["parents"][0])
        changed = repo.commits[c]["changes"]
        if changed and all(have.get(p) == before.get(p) for p in changed) \
                and not repo.exists_on(tip, repo.commits[c]["subject"], repo.commits[c]["author"]):
            out.append(c)
    if not out:
        raise LookupError("no commit cherry-picks cleanly onto the target")
    return rng.choice(out)[:ABBREV]


def revertible(state: dict, rng: random.Random, **context: str) -> str:
    """A seeded change (:meth:`_Repo.change`) on the target (``branch`` or ``base``) that
    reverts cleanly: every path it touches is still on the target exactly as the commit
    left it.  A target named by a commit is not itself reverted: "a new branch at that
    commit with a revert of that commit" is a branch at its parent said the long way."""
    repo = _Repo(state)
    tip = _target(repo, context, "branch", "base")
    named = context.get("branch") or context.get("base", "")
    by_hash = named.strip() not in repo.branches and named.strip() not in repo.tags
    have = repo.files(tip)
    out = []
    for c in sorted(repo.ancestors(tip)):
        if c.startswith("new:") or not repo.change(c) or (by_hash and c == tip):
            continue
        after = repo.files(c)
        changed = repo.commits[c]["changes"]
        subject = f'Revert "{repo.commits[c]["subject"]}"'
        if changed and all(have.get(p) == after.get(p) for p in changed) \
                and not repo.exists_on(tip, subject, AGENT):
            out.append(c)
    if not out:
        raise LookupError("no commit on the target reverts cleanly")
    return rng.choice(out)[:ABBREV]


def rewind_steps(state: dict, rng: random.Random, branch: str = "", **_: str) -> str:
    """How many first-parent steps to move ``branch`` back: 1 to 3, never to the root."""
    repo = _Repo(state)
    depth = len(repo.first_parents(repo.resolve(branch))) - 2
    if depth < 1:
        raise LookupError(f"{branch} has no commit to move back to but the root")
    return str(rng.randint(1, min(3, depth)))


# ---- paths, lines, authors, words -----------------------------------------------------------
def branch_path(state: dict, rng: random.Random, branch: str = "", **_: str) -> str:
    """A tracked text file at the tip of ``branch`` (not .gitignore)."""
    repo = _Repo(state)
    paths = sorted(p for p in repo.files(repo.resolve(branch)) if p != ".gitignore")
    if not paths:
        raise LookupError(f"{branch} tracks no file")
    return rng.choice(paths)


def ref_path(state: dict, rng: random.Random, ref: str = "", **_: str) -> str:
    """A file at ``ref``, preferring one that several commits changed (a real history)."""
    repo = _Repo(state)
    tip = repo.resolve(ref)
    paths = sorted(p for p in repo.files(tip) if p != ".gitignore")
    busy = [p for p in paths if len(repo.touching(tip, p)) >= 2]
    if not paths:
        raise LookupError(f"{ref} tracks no file")
    return rng.choice(busy or paths)


def line_number(state: dict, rng: random.Random, ref: str = "", path: str = "",
                **_: str) -> str:
    """A 1-based line number inside ``path`` at ``ref``, preferring lines past the first."""
    repo = _Repo(state)
    n = repo.lines(repo.resolve(ref), path)
    if n < 1:
        raise LookupError(f"{path} is empty at {ref}")
    return str(rng.randint(min(2, n), n))


def author(state: dict, rng: random.Random, ref: str = "", **_: str) -> str:
    """The email of an author of some, but not all, commits reachable from ``ref``."""
    repo = _Repo(state)
    history = repo.ancestors(repo.resolve(ref))
    counts: dict[str, int] = {}
    for c in history:
        email = repo.commits[c]["author"].rsplit("<", 1)[-1].rstrip(">")
        counts[email] = counts.get(email, 0) + 1
    some = sorted(e for e, n in counts.items() if n < len(history)) or sorted(counts)
    if not some:
        raise LookupError(f"{ref} has no commits")
    return rng.choice(some)


def word(state: dict, rng: random.Random, **_: str) -> str:
    """A word (4+ letters, not a hex string) in some but not all seeded commit subjects."""
    repo = _Repo(state)
    subjects = [repo.commits[c]["subject"] for c in repo.seeded()]
    counts: dict[str, int] = {}
    for s in subjects:
        for w in set(WORD.findall(s)):
            if not HEX.match(w.lower()):
                counts[w] = counts.get(w, 0) + 1
    good = sorted(w for w, n in counts.items() if 2 <= n < len(subjects) // 2)
    good = good or sorted(w for w, n in counts.items() if n < len(subjects))
    if not good:
        raise LookupError("no selective word in the commit subjects")
    return rng.choice(good)


def diff_base(state: dict, rng: random.Random, ref: str = "", **_: str) -> str:
    """A seeded commit whose tree differs from ``ref``'s, preferring ``ref``'s ancestors."""
    repo = _Repo(state)
    tip = repo.resolve(ref)
    have = repo.files(tip)
    differs = [c for c in repo.seeded() if repo.files(c) != have]
    behind = [c for c in differs if c in repo.ancestors(tip)]
    pool = behind or differs
    if not pool:
        raise LookupError(f"every seeded commit has the tree of {ref}")
    return repo.name_for(rng.choice(pool), rng)


# ---- new text ---------------------------------------------------------------------------------
def note_line(state: dict, rng: random.Random, path: str = "", **_: str) -> str:
    """A new line for ``path``: a comment in code and ini files, a sentence elsewhere."""
    words = rng.randint(5, 10)
    sentence = _fake_text(rng, lambda f: f.sentence(nb_words=words))
    if path.endswith(".py"):
        return f"# TODO: {sentence}"
    if path.endswith(".ini"):
        return f"; {sentence}"
    return sentence


def append_message(state: dict, rng: random.Random, path: str = "", **_: str) -> str:
    topic = _fake_text(rng, lambda f: f"{f.word(part_of_speech='adjective')} "
                                      f"{f.word(part_of_speech='noun')}")
    return f"Note {topic} in {path.rsplit('/', 1)[-1]}"


def remove_message(state: dict, rng: random.Random, path: str = "", **_: str) -> str:
    return f"Remove {path}"


TAG_MESSAGES = ("Release candidate {k} for QA", "Build {n} sent to staging",
                "Snapshot before the {month} release", "Candidate build {n}, tests green",
                "State signed off on {month} {day}")
"""What a person writes on a tag: a build or review milestone (not generated prose)."""
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


def tag_message(state: dict, rng: random.Random, **_: str) -> str:
    return rng.choice(TAG_MESSAGES).format(k=rng.randint(1, 9), n=rng.randint(100, 999),
                                           month=rng.choice(_MONTHS), day=rng.randint(1, 28))


def main_path(state: dict, rng: random.Random, **_: str) -> str:
    """A file on ``main``, preferring one that several commits changed."""
    return ref_path(state, rng, ref="main")


# ---- describers: the distinguishing value of a seeded commit ----------------------------

def commit_subject(state: dict, rng: random.Random, value: str = "", **_: str) -> str:
    """The subject line of the seeded commit whose hash starts with ``value`` (a branch
    or tag name is not described: LookupError)."""
    if not re.fullmatch(r"[0-9a-f]{7,40}", value):
        raise LookupError(f"{value!r} is not a commit hash")
    found = [c for sha, c in state.get("commits", {}).items() if sha.startswith(value)]
    if len(found) != 1:
        raise LookupError(f"no single commit {value!r}")
    return str(found[0]["subject"])


# ---- faults: the ref a planted defect left wrong (a repair tool's input) ----------------

def untagged_release(state: dict, rng: random.Random, **_: str) -> str:
    """The tag ``v<version>`` missing from the one ``Release <version>`` commit that has
    none; LookupError unless exactly one release commit lacks its tag."""
    tags = state.get("tags", {})
    missing = sorted("v" + c["subject"].removeprefix("Release ")
                     for c in state.get("commits", {}).values()
                     if re.fullmatch(r"Release \d+\.\d+\.\d+", c.get("subject", ""))
                     and "v" + c["subject"].removeprefix("Release ") not in tags)
    if len(missing) != 1:
        raise LookupError(f"{len(missing)} release commits without their tag")
    return missing[0]


def branch_with_new_tip(state: dict, rng: random.Random, **_: str) -> str:
    """The one branch whose tip is a commit the seed did not make."""
    found = sorted(b for b, c in state.get("branches", {}).items() if c.startswith("new:"))
    if len(found) != 1:
        raise LookupError(f"{len(found)} branches end in a commit the seed did not make")
    return found[0]


def seeded_branch(state: dict, rng: random.Random, **_: str) -> str:
    """Any branch the seed made (the open-loop control's guess for a looked-up branch)."""
    names = sorted(b for b in state.get("branches", {}) if SEEDED_BRANCH.match(b))
    if not names:
        raise LookupError("no seeded branch")
    return rng.choice(names)


def seeded_tag(state: dict, rng: random.Random, **_: str) -> str:
    """Any release tag (the open-loop control's guess for a looked-up tag)."""
    names = sorted(t for t in state.get("tags", {}) if SEEDED_TAG.match(t))
    if not names:
        raise LookupError("no seeded tag")
    return rng.choice(names)


def add_message(state: dict, rng: random.Random, path: str = "", **_: str) -> str:
    return f"Add {path}"


EVIDENCE_MESSAGES = ("Keep the failing log for the incident review",
                     "Add evidence for the review", "Check in the file the review asked for",
                     "Add the log the incident notes cite")
"""What a person writes when checking a file in as evidence: never its path, which the task
may have the solver find (a message naming it would give the finding away)."""


def evidence_message(state: dict, rng: random.Random, **_: str) -> str:
    return rng.choice(EVIDENCE_MESSAGES)
