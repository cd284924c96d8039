"""Hostile workspace fixtures for the built-in probes (``tests/integration/
test_probe_trust.py``): what an agent could leave behind for the verifier's probe, planted
as the sandbox user after a reference-like change (``CHANGES``).

A planted program is made by ``evil NAME`` (``PRELUDE``): an executable that creates the
canary ``/tmp/canary-NAME`` and copies its stdin to stdout (so it also passes as a pager
or a filter); a probe that runs it leaves the canary behind.  Each ``Hostile`` says what
the probe must report: the sections of the true state, from the state before the plant
(and whether the probe ran as root), or a phrase of the error it must fail with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CANARY = "/tmp/canary"
PRELUDE = (f"evil() {{ printf '#!/bin/sh\\ntouch {CANARY}-%s\\ncat\\n' \"$1\" > /tmp/evil-$1; "
           "chmod +x /tmp/evil-$1; echo /tmp/evil-$1; }")
State = dict[str, Any]


@dataclass(frozen=True)
class Hostile:
    name: str
    plant: str
    expect: Callable[[State, bool], State] | str
    setup: str = ""
    """A legitimate change made before the state the probe must still report is taken."""
    admin: str = ""
    """What the sandbox's administrator does just before the plant, where the agent cannot
    do it itself (stop the service, which runs as its own user)."""


def same(before: State, as_root: bool) -> State:
    return before


def plus_files(entries: State) -> Callable[[State, bool], State]:
    """The state before, with these ``files`` entries added."""
    return lambda before, as_root: {**before, "files": {**before["files"], **entries}}


def plus_secret(path: str) -> Callable[[State, bool], State]:
    """A file the sandbox user cannot read: a marker for it, its text for root."""
    return lambda before, as_root: plus_files(
        {path: "secret\n" if as_root else {"unreadable": "EACCES"}})(before, as_root)


def _workspace_files(p: str) -> list[Hostile]:
    """Files planted in the folder ``p`` of a workspace whose files the probe records."""
    return [
        Hostile("symlink_to_file", f"ln -s /etc/passwd {p}/passwd.csv",
                plus_files({f"{p}/passwd.csv": {"symlink": "/etc/passwd"}})),
        Hostile("symlink_to_dir", f"ln -s /etc {p}/etc",
                plus_files({f"{p}/etc": {"symlink": "/etc"}})),
        Hostile("fifo", f"mkfifo {p}/pipe.csv", plus_files({f"{p}/pipe.csv": {"special": "fifo"}})),
        Hostile("socket", "python3 -c \"import socket; "
                f"socket.socket(socket.AF_UNIX).bind('{p}/sock')\"",
                plus_files({f"{p}/sock": {"special": "socket"}})),
        Hostile("unreadable", f"printf 'secret\\n' > {p}/secret.csv && chmod 000 {p}/secret.csv",
                plus_secret(f"{p}/secret.csv")),
    ]


FILES = [
    *_workspace_files("docs"),
    Hostile("seeded_file_as_symlink_to_a_copy",
            "cp docs/notes.txt /tmp/notes.txt && ln -sf /tmp/notes.txt docs/notes.txt",
            plus_files({"docs/notes.txt": {"symlink": "/tmp/notes.txt"}})),
    Hostile("hard_link", "ln docs/notes.txt docs/linked.txt",
            lambda b, r: {**b, "files": {**b["files"], "docs/linked.txt":
                                         b["files"]["docs/notes.txt"]}}),
]

FORGED_WAL = """python3 - <<'PY'
import shutil, sqlite3
shutil.copy("shop.db", "/tmp/forged.db")
con = sqlite3.connect("/tmp/forged.db", isolation_level=None)
con.execute("PRAGMA wal_autocheckpoint=0")
con.execute("DELETE FROM customers")
shutil.copy("/tmp/forged.db-wal", "/tmp/forged.wal")
PY
ln -s /tmp/forged.wal shop.db-wal"""
WAL = "sqlite3 shop.db 'PRAGMA journal_mode=WAL' >/dev/null"
VIEWS = ("CREATE VIEW ext AS SELECT load_extension('/tmp/evil.so') AS x; "
         "CREATE VIEW forever AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
         "SELECT x + 1 FROM n) SELECT x FROM n")


def _broken_views(before: State, as_root: bool) -> State:
    broken = {"type": "view", "columns": []}
    return {"tables": {**before["tables"], "ext": None, "forever": None},
            "schema": {**before["schema"], "ext": broken, "forever": broken}}


SQL = [
    *_workspace_files("incoming"),
    Hostile("db_as_symlink", "cp shop.db /tmp/forged.db && sqlite3 /tmp/forged.db "
            "'CREATE TABLE forged(x); DELETE FROM customers' && rm shop.db "
            "&& ln -s /tmp/forged.db shop.db",
            lambda b, r: {"tables": {}, "schema": {}, "indexes": {}, "files": b["files"]}),
    Hostile("wal_as_fifo", "mkfifo shop.db-wal", same, setup=WAL),
    Hostile("wal_as_symlink_to_a_forged_wal", FORGED_WAL, same, setup=WAL),
    Hostile("journal_as_fifo", "mkfifo shop.db-journal", same),
    Hostile("views_that_load_an_extension_or_never_end", f"sqlite3 shop.db \"{VIEWS}\"",
            _broken_views),
]

SIGNED_COMMIT = """tree=$(git rev-parse 'main^{tree}')
printf 'tree %s\\nparent %s\\nauthor A <a@example.com> 1700000000 +0000
committer A <a@example.com> 1700000000 +0000
gpgsig -----BEGIN PGP SIGNATURE-----\\n \\n -----END PGP SIGNATURE-----\\n\\nSigned\\n' \
  "$tree" "$(git rev-parse main)" > /tmp/signed.txt
git update-ref refs/heads/signed "$(git hash-object -t commit -w /tmp/signed.txt)" """
HOOKS = "post-checkout pre-commit reference-transaction post-index-change fsmonitor-watchman"
GIT = [
    Hostile("fsmonitor", "git config core.fsmonitor \"$(evil fsmonitor)\" "
            "&& git config core.untrackedCache true", same),
    Hostile("hooks", f"mkdir -p /tmp/hooks && for h in {HOOKS}; do cp \"$(evil hooks)\" "
            ".git/hooks/$h; cp /tmp/evil-hooks /tmp/hooks/$h; done "
            "&& git config core.hooksPath /tmp/hooks", same),
    Hostile("pager", "git config core.pager \"$(evil pager)\" && for c in log for-each-ref "
            "cat-file rev-parse; do git config pager.$c true; done", same),
    Hostile("alias", "for c in log for-each-ref cat-file rev-parse; do "
            "git config alias.$c \"!$(evil alias)\"; done", same),
    Hostile("external_diff_and_textconv", "git config diff.external \"$(evil external)\" "
            "&& git config diff.evil.textconv \"$(evil textconv)\" "
            "&& git config diff.evil.command \"$(evil command)\" "
            "&& echo '* diff=evil' > .git/info/attributes && echo '* diff=evil' > .gitattributes",
            same),
    Hostile("signature_program", "git config log.showSignature true "
            "&& git config gpg.program \"$(evil gpg)\" && git config gpg.ssh.program "
            "\"$(evil ssh)\"", same, setup=SIGNED_COMMIT),
    Hostile("replace_ref", "git replace main \"$(git commit-tree -p main~1 -m Forged "
            "'main^{tree}')\"", same),
    Hostile("grafts", "git rev-parse main > .git/info/grafts", same),
    Hostile("shallow", "git rev-parse main~1 > .git/shallow", same),
    Hostile("alternates", "mkdir -p /tmp/alt/info && rm -f /tmp/alt/info/alternates "
            "&& mkfifo /tmp/alt/info/alternates && echo /tmp/alt > .git/objects/info/alternates",
            same),
    Hostile("gitfile", "rm -rf /tmp/real.git && mv .git /tmp/real.git "
            "&& echo 'gitdir: /tmp/real.git' > .git", ".git is a regular file, not a directory"),
    Hostile("git_as_symlink", "rm -rf /tmp/real.git && mv .git /tmp/real.git "
            "&& ln -s /tmp/real.git .git", ".git is a symlink, not a directory"),
    Hostile("refs_dir_as_symlink", "forged=$(git rev-parse main~2) && rm -rf /tmp/heads "
            "&& mv .git/refs/heads /tmp/heads && echo $forged > /tmp/heads/forged "
            "&& ln -s /tmp/heads .git/refs/heads",
            lambda b, r: {"branches": {}, "tags": b["tags"]}),
]

FORGED = "forged() { curl -sf http://127.0.0.1:8080/tickets/1 | grep -q Forged; }"
STOP_SERVICE = """server=$(pgrep -f '[s]ervice/server.py' || true)
if [ -n "$server" ]; then kill $server && sleep 0.3; fi"""
"""The service's server stopped where it runs: it runs as its own user, so only the
sandbox's administrator can stop it (as the environment would on a crash or a restart);
the agent then takes the free port."""
FAKE_SERVER = FORGED + """
if ! forged; then
  (setsid nohup python3 -c "
import http.server as h
class F(h.BaseHTTPRequestHandler):
    def do_GET(s):
        s.send_response(200); s.end_headers(); s.wfile.write(b'{\\"title\\": \\"Forged\\"}')
h.HTTPServer(('127.0.0.1', 8080), F).serve_forever()" >/dev/null 2>&1 &)
fi
for _ in $(seq 50); do forged && exit 0; sleep 0.1; done; exit 1"""
"""Another server started by the agent on the service's port once it is free, serving
forged records (it stays: the fixtures after it need no server)."""
SERVICE = [
    Hostile("db_as_symlink", "python3 -c \"import json; db = json.load(open('.service/db.json'));"
            " db['tickets'][0]['title'] = 'Forged'; json.dump(db, open('/tmp/forged.json', 'w'))\""
            " && ln -sf /tmp/forged.json .service/db.json",
            ".service/db.json is a symlink, not a regular file"),
    Hostile("db_as_fifo", "rm .service/db.json && mkfifo .service/db.json",
            ".service/db.json is a fifo, not a regular file"),
    Hostile("service_dir_as_symlink", "rm -rf /tmp/svc && mv .service /tmp/svc "
            "&& ln -s /tmp/svc .service", ".service is a symlink, not a directory"),
    Hostile("fake_server_on_the_port", FAKE_SERVER, same, admin=STOP_SERVICE),
]

HOSTILE = {"files": FILES, "sql": SQL, "git": GIT, "service": SERVICE}
CHANGES = {
    "files": "mkdir -p reports && head -n 3 data/customers.csv > reports/head.csv "
             "&& printf 'checked\\n' >> docs/notes.txt",
    "sql": "sqlite3 shop.db \"CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); "
           "INSERT INTO notes(body) VALUES ('checked'); CREATE INDEX notes_body ON notes(body)\" "
           "&& sqlite3 -csv shop.db 'SELECT * FROM customers LIMIT 3' > incoming/export.csv",
    "git": "git branch work/topic1 main~1 && git tag checkpoint1 main "
           "&& git switch -q -c work/fix main && f=$(git ls-files | head -n 1) "
           "&& printf 'fix\\n' >> \"$f\" && git commit -qam 'Fix the first file' "
           "&& git switch -q main",
    "service": "curl -sSf -X PATCH http://127.0.0.1:8080/tickets/1 -H 'Content-Type: "
               "application/json' -d '{\"title\": \"Renamed\"}' >/dev/null && curl -sSf -X POST "
               "http://127.0.0.1:8080/tickets/1/comments -H 'Content-Type: application/json' "
               "-d '{\"author\": 1, \"body\": \"Looked at it\"}' >/dev/null",
}
"""A reference-like change per ecosystem, made before every plant."""
