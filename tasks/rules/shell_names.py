"""The names a shell command uses: what the terminal view's grounding rule checks.

A name is a token of a command that refers to something of the workspace or of a
service, as opposed to shell syntax, a program, an option or a language keyword:

- a relative path (``data/orders.csv``, ``SERVICE.md``): a word with a ``/`` between
  name characters or a file extension; absolute paths (``/dev/null``) are the system's;
- the route segments of a URL (``/tickets/12/assignee`` -> ``tickets``, ``12``,
  ``assignee``), and the key and values of a ``key=value`` query (in the URL or after
  curl's ``--data-urlencode``/``-d``);
- both ends of a revision range (``main...topic``);
- JSON fields a snippet reads (``["id"]``, ``.get("id")``) or a body writes
  (``{"status": "closed"}`` -> ``status``, ``closed``);
- SQL names: the table after ``FROM``, ``JOIN``, ``INTO``, ``UPDATE``, ``TABLE``,
  ``VIEW`` or ``ON`` (unless it is a function call), the columns of ``USING (...)``, both
  parts of ``table.column``, and the operands of a dot command (``.schema orders``).

A file the command itself writes by redirection (``> out/x.txt``, ``> ledger.tmp``) is the
command's own choice, not something it had to be shown, so it is no name here (a tool's
output argument is still checked as an argument).

A script (a written file's content, or a here-document's body) uses the names of its
lines, each read as a command (comments and blank lines aside); a file one of its lines
writes by redirection is the script's own from then on (:func:`script_names`).  A command
with a here-document uses the names of its first line and of the document's body.

Words of the program's own vocabulary (subcommands, option values, awk and Python code,
format strings) are not names.  Standard library only: ``stats`` re-checks shards with it.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache

_REDIRECTS = {"<", ">", ">>", "&>", ">&", "<<<"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PATH = re.compile(r"^(?:[\w.-]+/)+[\w.-]*$|^[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}$")
_URL = re.compile(r"https?://[^/\s'\"]+(/[^\s'\"?]*)?(?:\?([^\s'\"]*))?")
_DATA_OPTIONS = {"--data-urlencode", "-d", "--data", "--data-raw"}
_QUERY = re.compile(r"^([A-Za-z_]\w*)=([^\s=]*)$")
_FIELD = re.compile(r"""\[\s*["'](\w+)["']\s*\]|\.get\(\s*["'](\w+)["']""")
_JSON_KEY = re.compile(r'"(\w+)"\s*:')
_JSON_VALUE = re.compile(r':\s*"(\w+)"')
_SQL = re.compile(r"^\s*(SELECT|CREATE|INSERT|UPDATE|DELETE|WITH|DROP|ALTER)\b", re.I)
_SQL_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|VIEW|ON)\s+([A-Za-z_]\w*)\b(?!\s*\()",
                        re.I)
_SQL_USING = re.compile(r"\bUSING\s*\(([^)]*)\)", re.I)
_SQL_QUALIFIED = re.compile(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*|\*)")
_SQL_WORDS = {"select", "from", "where", "as", "on", "table", "view", "index", "into"}
_SQL_STRING = re.compile(r"'(?:[^']|'')*'")
_DOT_COMMAND = re.compile(r"^\.[a-z]+(\s+.*)?$", re.S)
_RANGE = re.compile(r"^[\w/-]+\.{2,3}[\w/-]+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n(.*?)\n\2[ \t]*(?=\n|$)", re.S)


def _words(command: str, targets: list[str] | None = None) -> list[str]:
    """The shell words of ``command`` with operators, program names and assignments in
    command position dropped; [] when it does not parse.  Redirection targets are kept,
    and also added to ``targets`` when it is given."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    out: list[str] = []
    expect = True
    target = False
    for token in tokens:
        if token in _REDIRECTS:
            target = True
        elif target:
            out.append(token)
            if targets is not None:
                targets.append(token)
            target = False
        elif set(token) <= set("&|;()<>") or token in ("!", "{", "}"):
            expect = True
        elif expect and _ASSIGNMENT.match(token):
            continue
        elif expect:
            expect = False
        else:
            out.append(token)
    return out


def _sql(text: str) -> list[str]:
    plain = _SQL_STRING.sub("''", text)
    names = [m.group(1) for m in _SQL_TABLE.finditer(plain)]
    for m in _SQL_USING.finditer(plain):
        names += [c.strip() for c in m.group(1).split(",") if c.strip()]
    for m in _SQL_QUALIFIED.finditer(plain):
        names += [g for g in m.groups() if g != "*"]
    return [n for n in names if n.lower() not in _SQL_WORDS]


def _url(word: str) -> list[str]:
    names: list[str] = []
    for m in _URL.finditer(word):
        names += [seg for seg in (m.group(1) or "").split("/") if seg]
        for pair in (m.group(2) or "").split("&"):
            names += _query(pair)
    return names


def routes(command: str) -> list[list[str]]:
    """Per URL ``command`` calls with curl: its method, route segments and query keys
    (``[["PUT", "tickets", "12", "status"]]``)."""
    words = _words(command)
    method = next((w for prev, w in zip(words, words[1:], strict=False) if prev == "-X"),
                  "POST" if "-d" in words and "-G" not in words else "GET")
    keys = [m.group(1) for prev, w in zip(words, words[1:], strict=False)
            if prev in _DATA_OPTIONS and (m := _QUERY.match(w))]
    return [[method, *[seg for seg in (m.group(1) or "").split("/") if seg], *keys,
             *[pair.split("=")[0] for pair in (m.group(2) or "").split("&") if "=" in pair]]
            for word in words for m in _URL.finditer(word)]


def _query(word: str) -> list[str]:
    m = _QUERY.match(word)
    if not m:
        return []
    return [m.group(1), *[v for v in m.group(2).split(",") if v]]


def _code(word: str) -> list[str]:
    """Names in a program text argument (Python, JSON, SQL, a sqlite3 dot command)."""
    if _DOT_COMMAND.match(word):
        return [w for w in word.split()[1:] if not w.startswith("-")]
    if _SQL.match(word):
        return _sql(word)
    names = [a or b for a, b in _FIELD.findall(word)]
    if word.lstrip().startswith("{"):
        names += _JSON_KEY.findall(word) + _JSON_VALUE.findall(word)
    return names


def command_names(command: str) -> list[str]:
    """The names ``command`` uses (see the module doc), in order, without repeats."""
    return list(_command_names(command))


def script_names(script: str) -> list[str]:
    """The names the lines of ``script`` use, in order, without repeats: a file an earlier
    line wrote by redirection is not one."""
    names: list[str] = []
    created: set[str] = set()
    for line in script.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found, made = _names(line)
        names += [n for n in found if n not in created and n not in names]
        created.update(made)
    return names


@lru_cache(maxsize=1024)
def _command_names(command: str) -> tuple[str, ...]:
    """:func:`command_names`, remembered: a trace's commands recur in every trajectory of
    the task, and shell words are slow to split."""
    heredoc = _HEREDOC.search(command)
    if heredoc is None:
        return _names(command)[0]
    head = command[:heredoc.start()] + heredoc.group(3)
    names = [*_names(head)[0], *script_names(heredoc.group(4)),
             *_command_names(command[heredoc.end():])]
    return tuple(dict.fromkeys(names))


@lru_cache(maxsize=1024)
def _names(command: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names one command line uses, and the files it writes by redirection."""
    names: list[str] = []
    created: list[str] = []
    previous = ""
    for word in _words(command, created):
        after, previous = previous, word
        if word.startswith("-") or _NUMBER.match(word) or "%" in word:
            continue
        if "://" in word:
            found = _url(word)
        elif after in _DATA_OPTIONS and _QUERY.match(word):
            found = _query(word)
        elif _RANGE.match(word):
            found = [part for part in re.split(r"\.{2,3}", word) if part]
        elif _PATH.match(word):
            found = [word]
        else:
            found = _code(word)
        for name in found:
            if name not in names:
                names.append(name)
    return tuple(n for n in names if n not in created), tuple(created)
