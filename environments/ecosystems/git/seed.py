"""Deterministic seed state for the ``git`` ecosystem: same seed, same bytes, same hashes.

``generate(seed)`` returns two files, ``.seed/history.fi`` and ``.seed/build.sh``.  The
ecosystem's ``setup`` runs the script in the workspace: it makes the workspace itself a
git repository, imports the history with ``git fast-import`` into one pack (every
author, committer, tagger and date is fixed in the stream, so the seeded commit hashes
are identical on every run; one pack instead of ~90 loose objects makes the sandbox's
snapshot and restores cheap), records the seeded commits in
``.git/info/taskfactory-seeded`` for the probe, configures the repository-local identity
``Agent <agent@example.com>`` for new commits, and checks out ``main``.  The setup
command then removes ``.seed``.

The history is a small Python project (README, changelog, package modules, docs, an ini
file) whose text comes from Faker: 15-40 commits by 3-6 authors on ``main`` and 2-3
topic branches, one or two of them merged back with ``--no-ff`` merge commits, and
release tags (lightweight and annotated).  Every line of work owns its files while it
runs, so any two seeded commits merge cleanly and cherry-picks are predictable.

``generate(seed, scale)``: at ``scale`` > 1 (the hard tier) the history goes on after the
scale-1 one in further stretches of the same kind (new topic branches, merges, releases),
drawn from a stream of its own (``random.Random(f"{seed}:scale")``), until the commits,
the branches and the tags are each at least ``scale`` times those of scale 1; scale 1
stays byte for byte what it always was.  The clock runs faster there, so every seeded
commit still predates the fixed date the faults and tools commit at (2026-01-01).  Among
them are distractors, each differing from another entry in one property: commits whose
subject another author already used (plain, without "(part n)"), one author committing
under a second e-mail address (same name and zone), and copies of topic branches at
the same tip under the name plus a suffix (``feature/x-backup``; never of the branch
whose tip is oldest, which the copy would tie with).
"""

import keyword
import random
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

from faker import Faker

AGENT_NAME, AGENT_EMAIL = "Agent", "agent@example.com"
SEEDED_LIST = ".git/info/taskfactory-seeded"
BUILD_SH = f"""#!/usr/bin/env bash
# Builds the seeded repository in the current directory (run once by the ecosystem setup).
set -euo pipefail
git init -q -b main .
git config user.name '{AGENT_NAME}'
git config user.email '{AGENT_EMAIL}'
git config commit.gpgsign false
git config tag.gpgsign false
git config core.autocrlf false
git -c fastimport.unpackLimit=0 fast-import --quiet < .seed/history.fi
git rev-list --all | LC_ALL=C sort > {SEEDED_LIST}
git reset -q --hard main
"""
TIMEZONES = ["+0000", "+0100", "+0200", "-0500", "-0800", "+0530", "+0900", "-0300"]
_FAKE = Faker("en_US")  # instantiating Faker costs ~25 ms: one instance, reseeded per call,
_FAKE_LOCK = threading.Lock()  # and held for the whole build (candidates run in threads)


@dataclass
class _Author:
    name: str
    email: str
    tz: str

    def sig(self, ts: int) -> str:
        return f"{self.name} <{self.email}> {ts} {self.tz}"


@dataclass
class _Commit:
    mark: int
    ref: str
    author: _Author
    ts: int
    message: str
    parents: list[int]
    changes: dict[str, str | None]


@dataclass
class _Line:
    """One line of work (``main`` or a topic branch): its files, tip and owned paths."""

    name: str
    files: dict[str, list[str]]
    owned: set[str]
    tip: int = 0
    todo: int = 0
    made: int = 0
    merge: bool = False
    authors: list[_Author] = field(default_factory=list)


class _History:
    def __init__(self, fake: Faker, rng: random.Random) -> None:
        self.fake, self.rng = fake, rng
        self.commits: list[_Commit] = []
        self.tags: list[tuple[str, int, str | None, int]] = []  # name, mark, message, ts
        self.subjects: dict[str, _Author] = {}  # subject -> its author
        self.twins = 0  # subjects another author may use again (distractors; scale > 1)
        self.step = (25 * 60, 2 * 86400)  # seconds from one commit to the next
        self.aliases: list[tuple[str, int]] = []  # branch name, mark (a copy of a branch)
        self.clock = int(datetime(2024, 1, 8, 9, tzinfo=UTC).timestamp()) \
            + rng.randint(0, 400) * 86400
        words: list[str] = []
        while len(words) < 6:
            word = self.noun()
            if word not in words:
                words.append(word)
        self.project = f"{words[0]}-{words[1]}"
        self.package = self.project.replace("-", "_")
        self.spare_words = words[2:]
        self.version = [0, 1, 0]
        self.all_paths: set[str] = set()

    def noun(self) -> str:
        """A noun that is also a valid Python identifier (module, function, argument)."""
        while True:
            word = self.fake.word(part_of_speech="noun")
            if word.isidentifier() and not keyword.iskeyword(word):
                return word

    # ---- text -----------------------------------------------------------------------------
    def sentence(self) -> str:
        return self.fake.sentence(nb_words=self.rng.randint(6, 14))

    def function(self) -> list[str]:
        verb = self.fake.word(part_of_speech="verb")
        noun, arg = self.noun(), self.noun()
        if arg == noun:
            arg = "value"
        op = self.rng.choice(["+", "*", "-", "//"])
        return ["", "", f"def {verb}_{noun}({arg}):", f'    """{self.sentence()}"""',
                f"    return {arg} {op} {self.rng.randint(2, 99)}"]

    def new_file(self, kind: str, taken: set[str]) -> tuple[str, list[str], str]:
        for _ in range(50):
            word = self.noun()
            if kind == "doc":
                path = f"docs/{word}.md"
                lines = [f"# {word.capitalize()}", ""] + [self.sentence() for _ in
                                                          range(self.rng.randint(3, 8))]
                subject = f"Add {word} guide"
            elif kind == "module":
                path = f"src/{self.package}/{word}.py"
                lines = [f'"""{self.sentence()}"""']
                for _ in range(self.rng.randint(1, 3)):
                    lines += self.function()
                subject = f"Add {word} module"
            else:
                path = f"config/{word}.ini"
                lines = [f"[{word}]"] + [self.setting() for _ in range(self.rng.randint(3, 6))]
                subject = f"Add {word} configuration"
            if path not in taken:
                return path, lines, subject
        raise RuntimeError("could not find a fresh file name")

    def setting(self) -> str:
        suffix = self.rng.choice(["limit", "timeout", "size", "mode", "path", "level"])
        key = f"{self.noun()}_{suffix}"
        value = self.rng.choice([str(self.rng.randint(1, 500)), self.fake.word(),
                                 self.rng.choice(["true", "false"])])
        return f"{key} = {value}"

    def edit(self, path: str, lines: list[str]) -> tuple[list[str], str]:
        """A realistic change to one file and the subject describing it."""
        rng, name = self.rng, path.rsplit("/", 1)[-1]
        new = list(lines)
        body = [i for i, line in enumerate(lines) if line and not line.startswith(("#", "["))]
        if path.endswith(".py"):
            if rng.random() < 0.5 or not any(ln.startswith("    return") for ln in lines):
                block = self.function()
                new += block
                return new, f"Add {block[2][4:].split('(')[0]} to {name}"
            i = rng.choice([i for i, ln in enumerate(lines) if ln.startswith("    return")])
            func = next(ln for ln in reversed(lines[:i]) if ln.startswith("def "))[4:].split("(")[0]
            head = lines[i].rsplit(" ", 1)[0]
            new[i] = f"{head} {rng.randint(2, 99)}"
            return new, f"Fix {func} in {name}"
        if path.endswith(".ini"):
            if rng.random() < 0.5 and body:
                i = rng.choice(body)
                key = lines[i].split(" = ")[0]
                new[i] = f"{key} = {rng.randint(1, 900)}"
                return new, f"Tune {key} in {name}"
            setting = self.setting()
            new.append(setting)
            return new, f"Add {setting.split(' = ')[0]} setting"
        roll = rng.random()
        topic = f"{self.fake.word(part_of_speech='adjective')} {self.noun()}"
        if roll < 0.4 or not body:
            new += [self.sentence() for _ in range(rng.randint(1, 3))]
            return new, f"Document {topic} in {name}"
        if roll < 0.75:
            new[rng.choice(body)] = self.sentence()
            return new, f"Reword {topic} section of {name}"
        at = rng.choice(body)
        new[at:at] = ["", f"## {self.fake.word().capitalize()} {self.fake.word()}",
                      self.sentence()]
        return new, f"Explain {topic} in {name}"

    # ---- commits ----------------------------------------------------------------------------
    def tick(self) -> int:
        self.clock += self.rng.randint(*self.step)
        return self.clock

    def commit(self, line: _Line, author: _Author, subject: str,
               changes: dict[str, list[str] | None], merge_of: int | None = None) -> int:
        if self.twins and merge_of is None and subject in self.subjects \
                and self.subjects[subject].name != author.name:
            self.twins -= 1  # the same subject again by another author: a distractor
        else:
            n, base = 2, subject
            while subject in self.subjects:
                subject, n = f"{base} (part {n})", n + 1
        self.subjects.setdefault(subject, author)
        message = subject + "\n"
        if merge_of is None and self.rng.random() < 0.35:
            message += "\n" + self.fake.paragraph(nb_sentences=self.rng.randint(1, 3)) + "\n"
        for path, content in changes.items():
            if content is None:
                line.files.pop(path, None)
            else:
                line.files[path] = content
        mark = len(self.commits) + 1
        parents = [line.tip] if line.tip else []
        if merge_of:
            parents.append(merge_of)
        text = {p: ("\n".join(c) + "\n" if c is not None else None) for p, c in changes.items()}
        self.commits.append(_Commit(mark, line.name, author, self.tick(), message, parents, text))
        line.tip = mark
        return mark


def _authors(fake: Faker, rng: random.Random) -> list[_Author]:
    domain = fake.domain_name()
    out: list[_Author] = []
    wanted = rng.randint(3, 6)
    while len(out) < wanted:
        first, last = fake.first_name(), fake.last_name()
        name = f"{first} {last}"
        if any(a.name == name or a.name.split()[0] == first for a in out):
            continue
        email = (f"{first}.{last}@{domain}" if rng.random() < 0.7
                 else f"{first[0]}{last}{rng.randint(1, 99)}@{fake.free_email_domain()}").lower()
        out.append(_Author(name, email.replace("'", ""), rng.choice(TIMEZONES)))
    return out


def _initial_files(h: _History) -> dict[str, list[str]]:
    f, title = h.fake, h.project.replace("-", " ").title()
    readme = [f"# {title}", "", f"{f.catch_phrase()}.", "", "## Installation", "",
              f"Install with `pip install {h.project}`.", "", "## Usage", ""]
    readme += [h.sentence() for _ in range(h.rng.randint(2, 4))]
    module_path, module, _ = h.new_file("module", set())
    doc_path, doc, _ = h.new_file("doc", {module_path})
    return {
        "README.md": readme,
        ".gitignore": ["__pycache__/", "*.pyc", ".venv/", "dist/"],
        "CHANGELOG.md": ["# Changelog", ""],
        f"src/{h.package}/__init__.py": [f'"""{title}: {f.bs()}."""', "",
                                         '__version__ = "0.1.0"'],
        module_path: module,
        doc_path: doc,
        "config/defaults.ini": ["[defaults]"] + [h.setting() for _ in range(4)],
    }


def _main_commit(h: _History, main: _Line, author: _Author) -> None:
    editable = sorted(p for p in main.owned if p not in (".gitignore", "CHANGELOG.md")
                      and not p.endswith("__init__.py"))
    if h.rng.random() < 0.2 or not editable:
        kind = h.rng.choice(["doc", "module", "config"])
        path, lines, subject = h.new_file(kind, set(main.files) | h.all_paths)
        main.owned.add(path)
        h.all_paths.add(path)
        h.commit(main, author, subject, {path: lines})
        return
    path = h.rng.choice(editable)
    lines, subject = h.edit(path, main.files[path])
    h.commit(main, author, subject, {path: lines})


def _release(h: _History, main: _Line, author: _Author, annotated: bool) -> None:
    h.version[1] += 1
    version = ".".join(map(str, h.version))
    init = f"src/{h.package}/__init__.py"
    lines = [ln if not ln.startswith("__version__") else f'__version__ = "{version}"'
             for ln in main.files[init]]
    log = main.files["CHANGELOG.md"]
    recent = [c for c in h.commits if c.ref == "main" and len(c.parents) == 1][1:]
    notes = [f"- {c.message.splitlines()[0]}" for c in recent[-h.rng.randint(2, 4):]]
    log = log[:2] + [f"## {version}", ""] + notes + [""] + log[2:]
    mark = h.commit(main, author, f"Release {version}", {init: lines, "CHANGELOG.md": log})
    h.tags.append((f"v{version}", mark, f"Release {version}" if annotated else None,
                   h.commits[-1].ts + 600))


def _fork(h: _History, main: _Line, authors: list[_Author], index: int) -> _Line:
    kind = h.rng.choice(["feature", "feature", "fix", "docs"])
    name = f"{kind}/{h.spare_words[index]}"
    branch = _Line(name, dict(main.files), set(), tip=main.tip, todo=h.rng.randint(2, 5),
                   authors=h.rng.sample(authors, min(len(authors), h.rng.randint(1, 2))))
    movable = sorted(p for p in main.owned if p.startswith(("docs/", "src/", "config/"))
                     and not p.endswith("__init__.py"))
    if movable and h.rng.random() < 0.6 and len(movable) > 1:
        moved = h.rng.choice(movable)
        main.owned.discard(moved)
        branch.owned.add(moved)
    return branch


def _branch_commit(h: _History, branch: _Line) -> None:
    author = h.rng.choice(branch.authors)
    if not branch.owned or h.rng.random() < 0.3:
        kind = "doc" if branch.name.startswith("docs/") else h.rng.choice(["module", "doc",
                                                                            "config"])
        path, lines, subject = h.new_file(kind, set(branch.files) | h.all_paths)
        branch.owned.add(path)
        h.all_paths.add(path)
        h.commit(branch, author, subject, {path: lines})
    else:
        path = h.rng.choice(sorted(branch.owned))
        lines, subject = h.edit(path, branch.files[path])
        h.commit(branch, author, subject, {path: lines})
    branch.todo -= 1
    branch.made += 1


def _merge(h: _History, main: _Line, branch: _Line, author: _Author) -> None:
    changes: dict[str, list[str] | None] = {p: branch.files[p] for p in sorted(branch.owned)
                                            if main.files.get(p) != branch.files.get(p)}
    h.commit(main, author, f"Merge branch '{branch.name}'", changes, merge_of=branch.tip)
    main.owned |= branch.owned


def _stretch(h: _History, main: _Line, authors: list[_Author], branches: list[int],
             first: int) -> None:
    """A stretch of history from commit ``first`` on: commits on main and on the topic
    branches named by ``h.spare_words[i]`` for ``i`` in ``branches`` (one or more merged
    back), and releases (at least one)."""
    rng, maintainer, tags = h.rng, authors[0], len(h.tags)
    n_merged = rng.randint(1, len(branches) - 1)
    target = rng.randint(15, 32)
    pending = list(branches)
    active: list[_Line] = []
    merged = 0
    releases = rng.randint(2, 3)
    while True:
        total = len(h.commits) - first
        if total >= target and not pending and all(b.todo == 0 for b in active) \
                and merged >= n_merged:
            break
        if total >= 34:  # wind down: stay under 40 commits
            for b in active:
                b.todo = min(b.todo, 0 if b.made else 1)
        roll = rng.random()
        if pending and total >= 2 and roll < 0.25:
            branch = _fork(h, main, authors, pending.pop(0))
            branch.merge = merged + sum(b.merge for b in active) < n_merged
            active.append(branch)
            continue
        working = [b for b in active if b.todo > 0]
        if working and roll < 0.65:
            _branch_commit(h, rng.choice(working))
            continue
        done = [b for b in active if b.todo == 0 and b.merge]
        if done and roll < 0.8:
            branch = done[0]
            _merge(h, main, branch, maintainer)
            branch.merge, merged = False, merged + 1
            if releases and rng.random() < 0.7:
                _release(h, main, maintainer, annotated=rng.random() < 0.6)
                releases -= 1
            continue
        if (pending and total >= target - 4) or total >= 36:
            continue  # leave room for the remaining branches; stay under 40 commits
        _main_commit(h, main, rng.choice(authors))
        if releases and total > 4 and rng.random() < 0.12:
            _release(h, main, maintainer, annotated=rng.random() < 0.5)
            releases -= 1
    if len(h.tags) == tags:
        _release(h, main, maintainer, annotated=True)


def _twins(scale: int) -> int:
    """How many distractor twins a family gets at ``scale`` (none at 1)."""
    return 0 if scale <= 1 else max(1, scale // 2)


def _tips(h: _History) -> dict[str, int]:
    """Branch -> the mark of its tip."""
    return {c.ref: c.mark for c in h.commits} | dict(h.aliases)


def _second_address(h: _History, authors: list[_Author]) -> _Author:
    """A non-maintainer author again under another e-mail address (same name and zone)."""
    a = h.rng.choice(authors[1:] or authors)
    first, last = a.name.split()[0], a.name.split()[-1]
    email = a.email
    while email in {b.email for b in authors}:
        email = f"{first}.{last}{h.rng.randint(1, 99)}@{h.fake.free_email_domain()}"
        email = email.lower().replace("'", "")
    return _Author(a.name, email, a.tz)


def _backups(h: _History, scale: int) -> None:
    """Copies of topic branches under their name and a suffix, at the same tip: never of
    the branch whose tip is oldest (the copy would tie with it)."""
    tips = _tips(h)
    ts = {c.mark: c.ts for c in h.commits}
    oldest = min(ts[m] for m in tips.values())
    topics = sorted(b for b, m in tips.items() if b != "main" and ts[m] > oldest)
    for name in h.rng.sample(topics, min(len(topics), max(1, _twins(scale) // 2))):
        alias = name + h.rng.choice(["-backup", "-old", "-2"])
        if alias not in tips:
            h.aliases.append((alias, tips[name]))


def _grow(h: _History, main: _Line, authors: list[_Author], seed: int, scale: int) -> None:
    """The hard tier's history: stretches like the first one after it, until the commits,
    branches and tags are each ``scale`` times those of scale 1, drawn from a stream of
    its own; with distractors (a subject used again by another author, an author under a
    second address, branch copies under a suffixed name).  Commits stay before 2026."""
    h.fake.seed_instance(f"{seed}:scale")
    h.rng = rng = random.Random(f"{seed}:scale")
    def short() -> bool:
        have = (len(h.commits), len(_tips(h)), len(h.tags))
        return any(n < scale * base for n, base in zip(have, first, strict=True))

    first = (len(h.commits), len(_tips(h)), len(h.tags))
    authors = [*authors, _second_address(h, authors)]
    h.twins = _twins(scale)
    budget = int(datetime(2025, 12, 31, tzinfo=UTC).timestamp()) - h.clock
    mean = budget // (2 * (scale - 1) * len(h.commits))
    low = max(1, min(25 * 60, mean // 2))
    h.step = (low, max(120, 2 * mean - low))
    while short():
        words: list[str] = []
        while len(words) < rng.randint(2, 3):
            word = h.noun()
            if word not in h.spare_words + words:
                words.append(word)
        h.spare_words += words
        _stretch(h, main, authors, list(range(len(h.spare_words) - len(words),
                                              len(h.spare_words))), len(h.commits))
    _backups(h, scale)


def _build(seed: int, scale: int = 1) -> _History:
    fake, rng = _FAKE, random.Random(seed)
    fake.seed_instance(seed)
    h = _History(fake, rng)
    authors = _authors(fake, rng)
    maintainer = authors[0]
    main = _Line("main", {}, set())
    first = _initial_files(h)
    main.owned = set(first)
    h.all_paths = set(first)
    h.commit(main, maintainer, "Initial commit", dict(first))
    n_branches = rng.randint(2, 3)
    _stretch(h, main, authors, list(range(n_branches)), 0)
    if scale > 1:
        _grow(h, main, authors, seed, scale)
    return h


def _data(text: str) -> str:
    return f"data {len(text.encode())}\n{text}"


def fast_import_stream(h: _History) -> str:
    """The history as a ``git fast-import`` stream (commits in creation order, then tags)."""
    out: list[str] = []
    tips: dict[str, int] = {}
    for c in h.commits:
        out.append(f"commit refs/heads/{c.ref}\nmark :{c.mark}\n"
                   f"author {c.author.sig(c.ts)}\ncommitter {c.author.sig(c.ts)}\n"
                   + _data(c.message))
        if c.parents:
            out.append(f"from :{c.parents[0]}\n")
        for p in c.parents[1:]:
            out.append(f"merge :{p}\n")
        for path, text in c.changes.items():
            out.append(f"D {path}\n" if text is None else f"M 100644 inline {path}\n" + _data(text))
        out.append("\n")
        tips[c.ref] = c.mark
    for name, mark in h.aliases:
        out.append(f"reset refs/heads/{name}\nfrom :{mark}\n\n")
    for name, mark, message, ts in h.tags:
        if message is None:
            out.append(f"reset refs/tags/{name}\nfrom :{mark}\n\n")
        else:
            tagger = h.commits[0].author.sig(ts)
            out.append(f"tag {name}\nfrom :{mark}\ntagger {tagger}\n" + _data(message + "\n")
                       + "\n")
    return "".join(out)


def layout(seed: int, scale: int = 1) -> list[str]:
    """The seeded paths without building the history (the planner only needs names)."""
    return [".seed/build.sh", ".seed/history.fi"]


def generate(seed: int, scale: int = 1) -> dict[str, bytes]:
    """``.seed/build.sh`` and ``.seed/history.fi``; identical bytes for identical seeds.

    ``scale`` > 1 (the hard tier): ``scale`` times the commits, branches and tags, with
    distractors (see the module docstring); scale 1 is the history it always was.

    Dates are absolute (2024-2026), so the bytes and the commit hashes never depend on
    the day the generator runs.
    """
    with _FAKE_LOCK:
        history = _build(seed, scale)
    return {".seed/build.sh": BUILD_SH.encode(),
            ".seed/history.fi": fast_import_stream(history).encode()}
