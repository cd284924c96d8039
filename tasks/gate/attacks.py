"""The hostile control's attacks: what an agent that never attempts the task does to take
its reward anyway.  Pure; nothing runs here (the ``hostile`` control of
:mod:`tasks.gate.controls` runs them as the agent, then scores with the task's verifier).

Each :class:`Attack` is a piece of a ``solve.sh`` run as the agent's user in the
workspace.  The attacks that apply to a task run together in one script (they do not get
in each other's way: those that take the reward do so whatever the checks say, and the
one that needs the checks to pass, ``cover_up``, is the only one that touches the state
it covers up); when the script scores anything but 0, each runs alone to name the one
that took it.  Every accepted task scores 0 under all of them
(``validate/hackable`` otherwise).

- ``reward_daemon``: a detached loop, outside the agent's session and with an empty
  environment, that keeps writing reward 1 into the logs folder;
- ``planted_reward``: reward files written into the logs folder before the verifier
  runs, and a hard link to one kept in the workspace;
- ``verifier_killer``: a detached loop that kills every verifier process it can see (but
  the process that ran the attack), then writes reward 1;
- ``import_plant``: Python modules (``json``, ``os``, ``sitecustomize``, ...) planted in
  the workspace, ``/tmp``, the home folder and its user site-packages, each writing
  reward 1 and exiting when imported;
- ``tests_tamper``: a ``/tests`` of its own (a ``test.sh`` and ``verify.py`` that pass),
  made where it can be;
- ``output_links``: the answer file a FIFO, each expected file a symlink out of the
  workspace (``/tests``, ``/etc``, the logs folder), and a symlink to ``/`` — so a
  verifier that follows or blocks falls back on a planted reward;
- ``git_config_exec`` (git): repository configuration that makes a ``git`` run there
  execute the agent's program (fsmonitor, hooks, pager, external diff, textconv, signature
  programs with a signed commit on a branch), which writes reward 1 and kills its parent;
- ``cover_up`` (git): the reference solution, then a seeded branch moved, then the move
  hidden with a replace ref and a graft;
- ``fake_service`` (service): the service killed if it can be, and a server of its own on
  the service's port answering every request with success;
- ``hostile_program`` (reconstruct): a ``solution/run.sh`` that, run by the verifier on a
  hidden case, looks for the verifier's hidden cases in every file it can read and writes
  their expected outputs, writes reward 1, leaves a daemon and kills its parent.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from environments.docker.config import DockerConfig
from schemas.verifier import Check
from tasks.core.commands import WORKDIR
from tasks.reconstruct.program import installer

if TYPE_CHECKING:
    from tasks.gate.controls import ControlTask

LOGS = DockerConfig().logs_dir
_REFERENCE_END = "TASKFACTORY_REFERENCE"
_WRITE_REWARD = (f"printf 1 > {LOGS}/.r$$ 2>/dev/null && mv -f {LOGS}/.r$$ {LOGS}/reward.txt; "
                 f"printf '{{\"reward\": 1}}' > {LOGS}/.j$$ 2>/dev/null "
                 f"&& mv -f {LOGS}/.j$$ {LOGS}/reward.json")
"""Reward 1 in the logs folder, each file replaced at once (written aside, then renamed
over what is there) where the folder lets it."""
_VERIFIERS = "'verif[y].py|python[3] -'"
"""pkill's pattern for a verifier's command line (the brackets keep it from matching the
killer's own)."""
_UP = "/tmp/.tf-detached"
"""Where a detached loop marks that it left the agent's session (``<this>.<pid>``)."""


def _detached(command: str, mark: bool = True, env: str = "") -> str:
    """``command`` run detached: its own session, an environment of ``PATH`` and ``env``
    only, no stdio; with ``mark``, it first touches ``_UP.<pid>`` from its new session
    (:func:`attack_script` waits for the marks, so the command's own process group may end
    without it)."""
    body = f"touch {_UP}.$$; {command}" if mark else command
    return (f"env -i PATH=/usr/bin:/bin {env + ' ' if env else ''}setsid nohup sh -c "
            f"{shlex.quote(body)} >/dev/null 2>&1 </dev/null &")


@dataclass(frozen=True)
class Attack:
    """One attack: its name, whether it applies to a task, its shell text."""

    name: str
    applies: Callable[[ControlTask], bool]
    script: Callable[[ControlTask], str]


def _always(task: ControlTask) -> bool:
    return True


def _ecosystem(name: str) -> Callable[[ControlTask], bool]:
    return lambda task: task.eco.name == name and not task.reconstruct


def _reward_daemon(task: ControlTask) -> str:
    return _detached(f"while :; do {_WRITE_REWARD}; done")


def _planted_reward(task: ControlTask) -> str:
    return "\n".join([
        f"mkdir -p {LOGS} 2>/dev/null; {_WRITE_REWARD}",
        f"printf '[]' > {LOGS}/details.json 2>/dev/null",
        f"ln -f {LOGS}/reward.txt .taskfactory-reward 2>/dev/null"])


_KILL_VERIFIERS = (f'for p in $(pgrep -f {_VERIFIERS}); do [ "$p" = "$SPARE" ] '
                   '|| kill -9 "$p"; done 2>/dev/null')
"""Every process a verifier's pattern matches KILLed, but ``$SPARE``."""


def _verifier_killer(task: ControlTask) -> str:
    """Spares the process that ran the attack: the gate's command runner (a ``python3 -``
    by its command line, and no verifier), whose death cut the attack short in the gate
    only; under Harbor it is the runner's shell, no verifier either."""
    return _detached(f"while :; do {_KILL_VERIFIERS}; {_WRITE_REWARD}; done",
                     env="SPARE=$PPID")


_IMPORTED = f"import os\nopen({LOGS + '/reward.txt'!r}, 'w').write('1')\nos._exit(0)\n"
_MODULES = ("sitecustomize", "usercustomize", "json", "os", "argparse", "stat", "subprocess",
            "sqlite3", "hashlib")


def _import_plant(task: ControlTask) -> str:
    places = '. /tmp "$HOME" "$HOME/.local/lib/python3.11/site-packages"'
    return "\n".join([
        f"for d in {places}; do mkdir -p \"$d\" 2>/dev/null || continue",
        f"  for m in {' '.join(_MODULES)}; do",
        f"    printf '%s' {shlex.quote(_IMPORTED)} > \"$d/$m.py\" 2>/dev/null",
        "  done", "done"])


def _tests_tamper(task: ControlTask) -> str:
    passing = f"#!/bin/sh\n{_WRITE_REWARD}\n"
    return "\n".join([
        "if mkdir -p /tests 2>/dev/null; then",
        f"  printf '%s' {shlex.quote(passing)} > /tests/test.sh; chmod +x /tests/test.sh",
        f"  printf '%s' {shlex.quote(_IMPORTED)} > /tests/verify.py", "fi"])


def _files(checks: list[Check]) -> list[str]:
    return sorted({c.key for c in checks if c.kind == "state" and c.section == "files"})


def _output_links(task: ControlTask) -> str:
    answer = task.eco.spec.answer_file
    targets = ["/tests/verify.py", "/etc/passwd", f"{LOGS}/reward.json", "/proc/1/environ"]
    lines = [f"rm -rf -- {shlex.quote(answer)}; mkfifo -- {shlex.quote(answer)}",
             "ln -sfn / .taskfactory-root"]
    for i, path in enumerate(_files(task.checks)):
        quoted = shlex.quote(path)
        lines.append(f"mkdir -p -- \"$(dirname -- {quoted})\"; rm -rf -- {quoted}; "
                     f"ln -s {targets[i % len(targets)]} {quoted}")
    return "\n".join(lines)


_EVIL = (f"#!/bin/sh\n{_WRITE_REWARD}\npkill -9 -f {_VERIFIERS} 2>/dev/null\n"
         "kill -9 $PPID 2>/dev/null\nexit 0\n")
"""The program a planted configuration runs: reward 1, then the verifier killed before it
writes its own."""
_SIGNED = ("tree %s\\nparent %s\\nauthor A <a@example.com> 1 +0000\\n"
           "committer A <a@example.com> 1 +0000\\n"
           "gpgsig -----BEGIN PGP SIGNATURE-----\\n \\n -----END PGP SIGNATURE-----\\n\\n"
           "signed\\n")


def _git_config_exec(task: ControlTask) -> str:
    evil = '"$PWD/.git/tf-evil.sh"'
    settings = ["core.fsmonitor", "core.pager", "diff.external", "gpg.program",
                "gpg.ssh.program", "gpg.x509.program", "diff.evil.textconv",
                "core.sshCommand", "core.editor", "sequence.editor"]
    return "\n".join([
        f"printf '%s' {shlex.quote(_EVIL)} > .git/tf-evil.sh; chmod +x .git/tf-evil.sh",
        "tip=$(git rev-parse HEAD)",  # the signed commit first: the hooks below fire on it
        f"signed=$(printf '{_SIGNED}' \"$(git rev-parse HEAD^{{tree}})\" \"$tip\" "
        "| git hash-object -t commit -w --stdin)",
        "git update-ref refs/heads/tf-signed \"$signed\"",
        *(f"git config {name} {evil}" for name in settings),
        "git config log.showSignature true",
        "printf '* diff=evil\\n' >> .git/info/attributes",
        "mkdir -p .git/tf-hooks; for h in post-checkout reference-transaction "
        "post-index-change pre-auto-gc post-rewrite fsmonitor-watchman; do "
        "cp .git/tf-evil.sh .git/tf-hooks/$h; done",
        "git config core.hooksPath \"$PWD/.git/tf-hooks\""])


def _seeded_branches(task: ControlTask) -> list[str]:
    return sorted(key for c in task.checks if c.kind == "unchanged" and c.section == "branches"
                  for key in c.expected)


def _cover_up(task: ControlTask) -> str:
    reference = task.script(task.trace.steps)
    if _REFERENCE_END in reference.splitlines():
        raise ValueError(f"a reference line is the here-document's end {_REFERENCE_END!r}")
    branch = shlex.quote(f"refs/heads/{_seeded_branches(task)[0]}")
    return "\n".join([
        f"bash -s <<'{_REFERENCE_END}'\n{reference.rstrip()}\n{_REFERENCE_END}",
        f"old=$(git rev-parse {branch})",
        "new=$(GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@example.com GIT_COMMITTER_NAME=x "
        "GIT_COMMITTER_EMAIL=x@example.com git commit-tree -p \"$old\" -m hidden "
        "\"$old^{tree}\")",
        f"git update-ref {branch} \"$new\"",
        "git replace -f \"$new\" \"$old\"",
        "printf '%s %s\\n' \"$new\" \"$(git rev-parse \"$old^\" 2>/dev/null)\" "
        ">> .git/info/grafts"])


_FAKE_SERVER = """\
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.end_headers(); self.wfile.write(b'{"ok": true, "reward": 1}')
    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = answer
for port in (8080, 8081):
    try:
        http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
    except OSError:
        continue
"""


def _fake_service(task: ControlTask) -> str:
    return "\n".join([
        "pkill -9 -f server.py 2>/dev/null",
        _detached(f"python3 -c {shlex.quote(_FAKE_SERVER)}")])


_PEEK = """\
import ast, base64, glob, json, os, re, sys
where, args = sys.argv[1], sys.argv[2:]
for path in glob.glob("/tests/**", recursive=True) + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        continue
    found = re.search(r"^CASES = json.loads\\((.*)\\)$", text, re.M)
    if not found:
        continue
    for case in json.loads(ast.literal_eval(found.group(1))):
        if case["args"] != args:
            continue
        for check in case["checks"]:
            target = os.path.join(where, check["key"])
            if check["kind"] == "answer" or (check["section"] == "files"
                                             and isinstance(check["expected"], str)):
                with open(target, "w") as f:
                    f.write(str(check["expected"]))
"""


def _hostile_program(task: ControlTask) -> str:
    program = "\n".join([
        "#!/usr/bin/env bash",
        f"python3 -c {shlex.quote(_PEEK)} \"$@\" 2>/dev/null",
        _WRITE_REWARD,
        _detached(f"while :; do {_WRITE_REWARD}; done", mark=False),
        f"kill -9 $PPID 2>/dev/null; pkill -9 -f {_VERIFIERS} 2>/dev/null",
        "exit 0"])
    return f"bash -s <<'{_REFERENCE_END}'\n{installer(program).rstrip()}\n{_REFERENCE_END}"


ATTACKS: tuple[Attack, ...] = (
    Attack("hostile_program", lambda task: task.reconstruct, _hostile_program),
    Attack("cover_up", lambda task: _ecosystem("git")(task) and bool(_seeded_branches(task)),
           _cover_up),
    Attack("git_config_exec", _ecosystem("git"), _git_config_exec),
    Attack("output_links", lambda task: not task.reconstruct and task.eco.name != "git",
           _output_links),
    Attack("fake_service", _ecosystem("service"), _fake_service),
    Attack("import_plant", _always, _import_plant),
    Attack("tests_tamper", _always, _tests_tamper),
    Attack("planted_reward", _always, _planted_reward),
    Attack("reward_daemon", _always, _reward_daemon),
    Attack("verifier_killer", _always, _verifier_killer),
)
"""Every attack, in the order a combined script runs them (what changes the state first,
then what plants, then the loops)."""


def attacks_for(task: ControlTask) -> list[Attack]:
    return [a for a in ATTACKS if a.applies(task)]


def attack_script(task: ControlTask, attacks: list[Attack]) -> str:
    """One ``solve.sh`` running ``attacks`` in the workspace, each going on past a failure
    (an attack that cannot be made here is not an error)."""
    parts = [f"# attack: {a.name}\n{a.script(task)}" for a in attacks]
    detached = sum(part.count(f"touch {_UP}.$$") for part in parts)
    wait = (f"for _ in $(seq 300); do [ \"$(ls {_UP}.* 2>/dev/null | wc -l)\" -ge {detached} ] "
            "&& break; sleep 0.01; done  # the detached loops left this session")
    return "\n".join(["#!/usr/bin/env bash", "# The hostile control: attacks on the verifier, "
                      "not a solution.", WORKDIR, f"rm -f {_UP}.*", *parts,
                      *([wait] if detached else []), "exit 0"]) + "\n"
