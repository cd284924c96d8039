"""Probe for the ``git`` ecosystem: the repository's refs and history as canonical JSON.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the repository's work tree (the workspace).  Output, keys sorted::

    {"branches": {name: commit_id},
     "tags":     {name: {"commit": commit_id, "annotation": subject or null}},
     "commits":  {commit_id: {"author": "Name <email>", "subject": str,
                              "parents": [commit_id, ...], "tree": tree_hash,
                              "changes": {path: {"blob": hash12, "lines": n} or null}}}}

``commits`` holds every commit reachable from a branch or a tag; ``changes`` is the
commit's diff against its first parent (against nothing for a root commit; ``null``
marks a deleted path).  Nothing here depends on when a commit was made: a seeded commit
(listed in ``.git/info/taskfactory-seeded`` by the setup) is identified by its hash,
which is fixed; any other commit by ``new:`` + a digest of its tree, its parents' ids,
its author and its subject, so a correct solution run at any time, by any committer,
with any commit dates, reproduces the same ids.  Commit bodies, committers, dates, tag
objects and taggers are left out for the same reason.  Two runs on the same state print
the same bytes; the probe writes nothing (no index refresh).  HEAD, the index and the work
tree are not part of the state: tasks are about branches and tags, and a solver may leave
any branch checked out.  Needs git >= 2.31 (``--diff-merges``); it passes
``safe.directory=*`` so it also runs as a user that does not own the repository.
"""

import hashlib
import json
import os
import subprocess

GIT = ["git", "-c", "safe.directory=*", "-c", "core.quotepath=off", "--no-pager"]
SEEDED = ".git/info/taskfactory-seeded"


def git(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run([*GIT, *args], input=data, capture_output=True, check=True).stdout


def read_refs() -> tuple[dict, dict]:
    """Branch -> commit hash; tag -> (commit hash, annotation subject or None).

    A tag is annotated when its ref names a tag object carrying the same name; a plain ref
    to another tag's object (``git tag new v1.0`` where v1.0 is annotated) counts as a
    lightweight tag on that tag's commit, as ``git tag new v1.0^{commit}`` would make."""
    fmt = ("%(refname)%00%(objecttype)%00%(objectname)%00%(tag)%00%(contents:subject)"
           "%00%(*objecttype)%00%(*objectname)")
    branches, tags = {}, {}
    for line in git("for-each-ref", f"--format={fmt}", "refs/heads", "refs/tags")\
            .decode().splitlines():
        ref, kind, obj, tag_name, subject, peeled_kind, peeled = line.split("\0")
        if ref.startswith("refs/heads/"):
            branches[ref[len("refs/heads/"):]] = obj
            continue
        name = ref[len("refs/tags/"):]
        if kind == "tag":  # a tag of a tag is peeled further by rev-parse
            target = peeled if peeled_kind == "commit" else git(
                "rev-parse", "--verify", "-q", f"{obj}^{{commit}}").decode().strip()
            tags[name] = (target or obj, subject if tag_name == name else None)
        else:
            tags[name] = (obj, None)
    return branches, tags


def read_commits() -> dict[str, dict]:
    """hash -> raw fields and first-parent changes, for every commit reachable from a ref."""
    out = git("log", "--branches", "--tags", "--format=%x01%H%x00%P%x00%T%x00%an <%ae>%x00%s",
              "--raw", "--no-abbrev", "--no-renames", "--root", "--diff-merges=first-parent",
              "-z").decode("utf-8", errors="replace")
    commits = {}
    for record in out.split("\x01")[1:]:
        fields = record.split("\0")
        sha, parents, tree, author, subject = fields[:5]
        rest = [f for f in fields[5:] if f != ""]
        changes = {}
        i = 0
        while i + 1 < len(rest):
            meta, path = rest[i].lstrip("\n"), rest[i + 1]
            i += 2
            parts = meta.split()
            if len(parts) < 5:
                continue
            changes[path] = None if parts[4].startswith("D") else parts[3]
        commits[sha] = {"parents": parents.split(), "tree": tree, "author": author,
                        "subject": subject, "changes": changes}
    return commits


def line_counts(blobs: list[str]) -> dict[str, int]:
    if not blobs:
        return {}
    out = git("cat-file", "--batch", data="".join(b + "\n" for b in blobs).encode())
    counts, pos = {}, 0
    for blob in blobs:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        body = out[header_end + 1:header_end + 1 + size]
        counts[blob] = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
        pos = header_end + 1 + size + 1
    return counts


def main() -> None:
    seeded = set()
    if os.path.exists(SEEDED):
        with open(SEEDED) as f:
            seeded = set(f.read().split())
    branches, tags = read_refs()
    raw = read_commits()
    ids: dict[str, str] = {}

    def stable_id(sha: str) -> str:
        if sha in ids:
            return ids[sha]
        stack = [sha]
        while stack:  # parents before children, without recursion
            top = stack[-1]
            todo = [p for p in raw[top]["parents"] if p not in ids and p in raw]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            c = raw[top]
            if top in seeded:
                ids[top] = top
            else:
                blob = json.dumps([c["tree"], [ids.get(p, p) for p in c["parents"]],
                                   c["author"], c["subject"]])
                ids[top] = "new:" + hashlib.sha1(blob.encode()).hexdigest()[:20]
        return ids[sha]

    blobs = sorted({b for c in raw.values() for b in c["changes"].values() if b})
    lines = line_counts(blobs)
    commits = {}
    for sha, c in raw.items():
        commits[stable_id(sha)] = {
            "author": c["author"], "subject": c["subject"], "tree": c["tree"],
            "parents": [stable_id(p) for p in c["parents"]],
            "changes": {p: ({"blob": b[:12], "lines": lines[b]} if b else None)
                        for p, b in sorted(c["changes"].items())},
        }
    state = {
        "branches": {name: stable_id(sha) for name, sha in branches.items()},
        "tags": {name: {"commit": stable_id(sha) if sha in raw else sha, "annotation": note}
                 for name, (sha, note) in tags.items()},
        "commits": commits,
    }
    print(json.dumps(state, sort_keys=True, separators=(",", ":")))


main()
