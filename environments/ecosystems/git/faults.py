"""Fault injectors of the ``git`` ecosystem: ``plant(files, seed)`` appends commands to the
seed's build script (``.seed/build.sh``, run by the setup) that leave the repository the
way a slip of the hand does (ecosystem.yaml, ``faults``).

The probe sees branches and tags (and the commits they reach), so every defect is a ref
in the wrong place, or gone, and every repair puts it back exactly: release tags on their
``Release <version>`` commits (annotated ones with that message), branch tips where the
seed left them, no commit the seed did not make.  What git keeps makes each one
recoverable: commit subjects, the reflogs of a branch and of HEAD.
"""

from __future__ import annotations

import random
import re
import shlex

Files = dict[str, bytes]
SCRIPT, HISTORY = ".seed/build.sh", ".seed/history.fi"
WHEN = "GIT_AUTHOR_DATE='2026-01-01T12:00:00+0000' GIT_COMMITTER_DATE='2026-01-01T12:00:00+0000'"


def _rng(name: str, seed: int) -> random.Random:
    return random.Random(f"fault:{name}:{seed}")


def _tags(files: Files) -> dict[str, bool]:
    """Release tag -> annotated, from the fast-import stream."""
    text = files[HISTORY].decode()
    tags = {m: True for m in re.findall(r"^tag (\S+)$", text, re.M)}
    tags.update({m: False for m in re.findall(r"^reset refs/tags/(\S+)$", text, re.M)})
    return tags


def _topics(files: Files) -> list[str]:
    text = files[HISTORY].decode()
    return sorted(set(re.findall(r"^commit refs/heads/(\S+)$", text, re.M)) - {"main"})


def _pick(rng: random.Random, items: list[str], what: str) -> str:
    if not items:
        raise LookupError(f"the seeded history has no {what}")
    return rng.choice(sorted(items))


def _append(files: Files, *commands: str) -> Files:
    return {**files, SCRIPT: files[SCRIPT] + ("\n".join(commands) + "\n").encode()}


def moved_release_tag(files: Files, seed: int) -> Files:
    """A release tag moved one commit back (re-tagged on the wrong commit), of the same
    kind as before (annotated with its message, or lightweight); a fixed tagger date keeps
    the tag object, and so the rebuilt image, the same on every realization."""
    tags = _tags(files)
    tag = _pick(_rng("moved_release_tag", seed), list(tags), "release tag")
    annotate = f"-a -m {shlex.quote('Release ' + tag.removeprefix('v'))} " if tags[tag] else ""
    return _append(files, f"{WHEN} git tag -f {annotate}{tag} {tag}^{{commit}}^ > /dev/null")


def deleted_release_tag(files: Files, seed: int) -> Files:
    """An annotated release tag deleted."""
    tag = _pick(_rng("deleted_release_tag", seed),
                [t for t, annotated in _tags(files).items() if annotated], "annotated tag")
    return _append(files, f"git tag -d {tag} > /dev/null")


def rewound_branch(files: Files, seed: int) -> Files:
    """A topic branch reset one or two commits back (its branch reflog remembers)."""
    rng = _rng("rewound_branch", seed)
    branch = _pick(rng, _topics(files), "topic branch")
    return _append(files, f"git branch -f {branch} {branch}~{rng.randint(1, 2)}")


def deleted_branch(files: Files, seed: int) -> Files:
    """A topic branch checked out once and then deleted (HEAD's reflog remembers)."""
    branch = _pick(_rng("deleted_branch", seed), _topics(files), "topic branch")
    return _append(files, f"git checkout -q {branch}", "git checkout -q main",
                   f"git branch -q -D {branch}")


def stray_commit(files: Files, seed: int) -> Files:
    """A debugging commit made straight on main."""
    line = shlex.quote(_pick(_rng("stray_commit", seed), [
        'print("debug: here")', 'print("DEBUG", locals())', "import pdb; pdb.set_trace()"],
        "line"))
    return _append(files, "f=$(git ls-files '*.py' | LC_ALL=C sort | head -n 1)",
                   f'printf "%s\\n" {line} >> "$f"',
                   f"git add -- \"$f\" && {WHEN} git commit -q -m 'WIP: debug output'")
