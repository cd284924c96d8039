"""Probe for the ``git`` ecosystem: the repository's refs and history as canonical JSON.

Runs inside the sandbox with the standard library only (``python3 - < probe.py``), from
the repository's work tree (the workspace), and inside the verifier (as root, on what the
agent left).  Output, keys sorted::

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
objects and taggers are left out for the same reason.  HEAD, the index and the work tree
are not part of the state: tasks are about branches and tags, and a solver may leave any
branch checked out.  Needs git >= 2.31 (``--diff-merges``).

Nothing of the workspace's ``.git`` is executed or trusted beyond its objects and its
branch and tag refs.  The probe builds a bare repository of its own in a temporary folder:
the loose objects and packs (regular files only, no symlink followed; never
``objects/info/alternates``, ``info/grafts``, ``shallow``, a commit-graph or a
multi-pack index), and the refs under ``refs/heads`` and ``refs/tags`` (loose files and
``packed-refs``; names checked as git checks them, ids 40 hex digits, symbolic refs
resolved within heads and tags only), written as its own ``packed-refs``.  git then runs
with ``GIT_DIR`` = that repository and an environment built from scratch (no system or
global configuration, a temporary ``HOME``, no replace objects, nothing inherited that
starts with ``GIT_``), so no configuration, hook, fsmonitor, pager, alias, diff driver,
textconv, signature program, mailmap, replace ref, graft or alternate of the workspace
takes effect.  ``.git`` must be a real directory: a gitfile or a symlink is not followed
(the probe fails, as without a repository).  Two runs on the same state print the same
bytes; the probe writes nothing into the workspace.
"""

import contextlib
import hashlib
import json
import os
import re
import subprocess

TYPE_CHECKING = False  # not typing's: importing typing costs more than a probe's work
if TYPE_CHECKING:  # joined in front of this script (ecosystem.yaml: probe)
    from file_entry import NotRegular, copy_regular, open_dir, private_dir, read_regular

GIT_OPTIONS = ["-c", "core.quotepath=off", "--no-pager"]
SEEDED = ".git/info/taskfactory-seeded"
REF_ROOTS = ("refs/heads/", "refs/tags/")
HEX40 = re.compile(r"[0-9a-f]{40}")
LOOSE = re.compile(r"[0-9a-f]{38}")
PACK = re.compile(r"pack-[0-9a-f]{40}\.(pack|idx)")
BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(/|$)|[/.]$")
MAX_OBJECTS = 1 << 30
"""Bytes of objects the probe copies at most (the probe fails beyond)."""
MAX_REFS = 16 << 20


def valid_ref(name: str) -> bool:
    """Is ``name`` (``refs/heads/...`` or ``refs/tags/...``) a ref name git accepts?"""
    return name.startswith(REF_ROOTS) and name not in REF_ROOTS and not BAD_REF.search(name)


def copy_objects(dest: str) -> None:
    """Copy ``.git/objects``' loose objects and packs (a ``.pack`` with its ``.idx``) into
    ``dest``, skipping anything that is not a regular file with such a name: alternates,
    commit-graphs and multi-pack indexes stay behind."""
    wanted = []
    for name in list_dir(".git/objects"):
        if re.fullmatch(r"[0-9a-f]{2}", name):
            wanted += [f"{name}/{obj}" for obj in list_dir(f".git/objects/{name}")
                       if LOOSE.fullmatch(obj)]
    packs = set(list_dir(".git/objects/pack"))
    wanted += [f"pack/{name}" for name in packs if PACK.fullmatch(name)
               and {name.rpartition(".")[0] + ext for ext in (".pack", ".idx")} <= packs]
    budget = MAX_OBJECTS
    for path in sorted(wanted):
        os.makedirs(os.path.join(dest, os.path.dirname(path)), exist_ok=True)
        with contextlib.suppress(FileNotFoundError, NotRegular):
            budget -= copy_regular(f".git/objects/{path}", os.path.join(dest, path), budget)


def list_dir(path: str) -> list[str]:
    """The names in the directory ``path`` (no symlink followed); [] when it is missing or
    not a real directory."""
    try:
        fd = open_dir(path)
    except (FileNotFoundError, NotADirectoryError, NotRegular):
        return []
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def loose_refs(prefix: str) -> dict[str, str]:
    """Ref name -> the content of its loose file, for every regular file under
    ``.git/<prefix>`` (directories that are symlinks are not entered)."""
    refs, todo = {}, [prefix.rstrip("/")]
    while todo:
        folder = todo.pop()
        for name in list_dir(".git/" + folder):
            ref = f"{folder}/{name}"
            try:
                refs[ref] = read_regular(".git/" + ref, 4096).decode("ascii").strip()
            except NotRegular as exc:
                if exc.kind == "directory":
                    todo.append(ref)
            except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
                continue
    return refs


def read_ref_files() -> dict[str, str]:
    """Ref name -> commit or tag id for the branches and tags: ``packed-refs`` first, loose
    refs over them, symbolic refs resolved to a branch or a tag (or left out)."""
    raw: dict[str, str] = {}
    try:
        packed = read_regular(".git/packed-refs", MAX_REFS).decode("utf-8", "surrogateescape")
    except (FileNotFoundError, NotRegular, ValueError):
        packed = ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if HEX40.fullmatch(sha) and name.startswith(REF_ROOTS):
            raw[name] = sha
    for prefix in REF_ROOTS:
        raw.update(loose_refs(prefix))
    refs = {}
    for name, value in raw.items():
        for _ in range(5):  # git's own limit on symbolic ref chains
            if not value.startswith("ref: "):
                break
            value = raw.get(value[5:].strip(), "")
        if valid_ref(name) and HEX40.fullmatch(value):
            refs[name] = value
    return refs


def clean_repository(folder: str) -> str:
    """A bare repository in ``folder`` holding the workspace's objects and its branch and
    tag refs, and nothing else of its ``.git``; raises when ``.git`` is no directory."""
    fd = open_dir(".git")  # NotRegular for a gitfile or a symlink
    os.close(fd)
    repo = os.path.join(folder, "repo")
    os.makedirs(os.path.join(repo, "refs", "heads"))
    os.makedirs(os.path.join(repo, "refs", "tags"))
    os.makedirs(os.path.join(repo, "objects", "pack"))
    copy_objects(os.path.join(repo, "objects"))
    with open(os.path.join(repo, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(repo, "config"), "w") as f:
        f.write("[core]\n\trepositoryformatversion = 0\n\tbare = true\n")
    with open(os.path.join(repo, "packed-refs"), "wb") as f:  # names as their file's bytes
        f.writelines(f"{sha} {name}\n".encode("utf-8", "surrogateescape")
                     for name, sha in sorted(read_ref_files().items()))
    return repo


def git_runner(folder: str, repo: str):
    """``git(*args, data=None) -> stdout`` on ``repo``, with an environment of its own."""
    dirs = [p for p in os.environ.get("PATH", os.defpath).split(":") if p.startswith("/")]
    program = next((os.path.join(d, "git") for d in dirs if os.access(os.path.join(d, "git"),
                                                                       os.X_OK)), None)
    if program is None:
        raise RuntimeError("git is not installed (not found on PATH)")
    path = ":".join(dirs)
    home = os.path.join(folder, "home")
    os.mkdir(home)
    env = {"PATH": path, "HOME": home, "GIT_DIR": repo, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
           "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

    def git(*args: str, data: bytes | None = None) -> bytes:
        return subprocess.run([program, *GIT_OPTIONS, *args], input=data, env=env, cwd=folder,
                              capture_output=True, check=True).stdout
    return git


def read_refs(git) -> tuple[dict, dict]:
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


def read_commits(git) -> dict[str, dict]:
    """hash -> raw fields and first-parent changes, for every commit reachable from a ref."""
    out = git("log", "--branches", "--tags", "--no-use-mailmap",
              "--format=%x01%H%x00%P%x00%T%x00%an <%ae>%x00%s", "--raw", "--no-abbrev",
              "--no-renames", "--root", "--diff-merges=first-parent", "-z"
              ).decode("utf-8", errors="replace")
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


def line_counts(git, blobs: list[str]) -> dict[str, int]:
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


def seeded_commits() -> set[str]:
    """The hashes the setup listed; none when the list is missing or no regular file.
    Editing it can only make ids differ from the expected ones: a listed commit's id is
    its own hash, which names that very commit, and an unlisted one's is ``new:...``."""
    try:
        return set(read_regular(SEEDED, MAX_REFS).decode("ascii", "replace").split())
    except (FileNotFoundError, NotRegular, ValueError):
        return set()


def stable_ids(raw: dict[str, dict], seeded: set[str]) -> dict[str, str]:
    """hash -> id for every commit of ``raw``: its hash when seeded, else ``new:`` + a
    digest of its tree, its parents' ids, its author and its subject (parents first,
    without recursion).  A commit that is its own ancestor (objects stored under other ids
    than their content's) raises ``ValueError``."""
    ids: dict[str, str] = {}
    for start in raw:
        path, on_path = [(start, iter(raw[start]["parents"]))], {start}
        while path:
            top, parents = path[-1]
            if top in ids:
                path.pop()
                on_path.discard(top)
                continue
            parent = next((p for p in parents if p in raw and p not in ids), None)
            if parent in on_path:
                raise ValueError(f"commit {parent} is its own ancestor: the repository's "
                                 f"objects do not match their ids")
            if parent is not None:
                path.append((parent, iter(raw[parent]["parents"])))
                on_path.add(parent)
                continue
            c = raw[top]
            blob = json.dumps([c["tree"], [ids.get(p, p) for p in c["parents"]],
                               c["author"], c["subject"]])
            ids[top] = top if top in seeded else \
                "new:" + hashlib.sha1(blob.encode()).hexdigest()[:20]
    return ids


def state(git, seeded: set[str]) -> dict:
    branches, tags = read_refs(git)
    raw = read_commits(git)
    ids = stable_ids(raw, seeded)
    blobs = sorted({b for c in raw.values() for b in c["changes"].values() if b})
    lines = line_counts(git, blobs)
    commits = {}
    for sha, c in raw.items():
        commits[ids[sha]] = {
            "author": c["author"], "subject": c["subject"], "tree": c["tree"],
            "parents": [ids[p] for p in c["parents"]],
            "changes": {p: ({"blob": b[:12], "lines": lines[b]} if b else None)
                        for p, b in sorted(c["changes"].items())},
        }
    return {
        "branches": {name: ids[sha] for name, sha in branches.items()},
        "tags": {name: {"commit": ids.get(sha, sha), "annotation": note}
                 for name, (sha, note) in tags.items()},
        "commits": commits,
    }


def main() -> None:
    seeded = seeded_commits()
    with private_dir() as folder:
        git = git_runner(folder, clean_repository(folder))
        print(json.dumps(state(git, seeded), sort_keys=True, separators=(",", ":")))


main()
