"""The in-container runner, run here on the host as a real process (no Docker needed).

It is started exactly as in a container -- the ``python3 -c`` bootstrap reading the
payload from stdin -- and spoken to over pipes with the real protocol.  As in a container,
where it runs as the sandbox user, it runs as a uid of its own when the tests run as root:
its sweeps (what a timed-out exec left) KILL processes of its uid, and as root on the host
that would be every process other tests, or anyone, started meanwhile.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from environments.runner import launch_argv, payload
from environments.runner.protocol import FrameReader, encode_frame

RUNNER_UID = 64023
"""The runner's uid when the tests run as root: one no other process on the host uses."""
AS_ROOT = os.getuid() == 0


class Runner:
    """A runner process on the host and a blocking client for it."""

    def __init__(self, reap: tuple[int, ...] = ()) -> None:
        user = {"user": RUNNER_UID, "group": RUNNER_UID, "extra_groups": [],
                "env": {"PATH": "/usr/local/bin:/usr/bin:/bin"}} if AS_ROOT else {}
        self.proc = subprocess.Popen(launch_argv(reap), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, cwd="/", **user)  # fmt: skip
        self.proc.stdin.write(payload())
        self.proc.stdin.flush()
        self.frames, self.ready, self.ids = FrameReader(), [], iter(range(1, 10**6))
        self.hello = self.answer(0)["hello"]

    def send(self, header: dict, blob: bytes = b"") -> int:
        rid = next(self.ids)
        self.proc.stdin.write(encode_frame({**header, "id": rid}, blob))
        self.proc.stdin.flush()
        return rid

    def next_answer(self) -> tuple[dict, bytes]:
        while not self.ready:
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert data, "the runner closed its output"
            self.ready += self.frames.feed(data)
        return self.ready.pop(0)

    def answer(self, rid: int) -> dict:
        header, blob = self.next_answer()
        assert header["id"] == rid, header
        return {**header, "blob": blob}

    def exec(self, argv: list[str], cwd: str = "/tmp", timeout: float = 20, cap: int = 2**20,
             env: dict | None = None, stdin: bytes | None = None) -> dict:  # fmt: skip
        req = {"op": "exec", "argv": argv, "cwd": cwd, "env": env or {}, "timeout": timeout,
               "cap": cap, "stdin": stdin is not None}  # fmt: skip
        res = self.answer(self.send(req, stdin or b""))
        res["stdout"], res["stderr"] = res["blob"][: res["out"]], res["blob"][res["out"] :]
        return res

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)


@pytest.fixture()
def tmp_path() -> Iterator[Path]:
    """A fresh folder the runner's uid owns (pytest's own are root's, mode 700)."""
    path = Path(tempfile.mkdtemp(prefix="runner-test-"))
    if AS_ROOT:
        os.chown(path, RUNNER_UID, RUNNER_UID)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _give(path: Path) -> None:
    """As root: hand what the test wrote under ``path`` to the runner's uid (in a container
    the sandbox user made it)."""
    if AS_ROOT:
        for where, dirs, files in os.walk(path):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(where, name), RUNNER_UID, RUNNER_UID)


@pytest.fixture()
def runner() -> Iterator[Runner]:
    r = Runner()
    yield r
    r.close()


def _alive(marker: str) -> list[str]:
    """Processes whose command line holds ``marker`` (zombies excluded)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    pids = []
    for pid in found.split():
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                pids.append(pid)
        except (FileNotFoundError, IndexError):
            pass
    return pids


def _marker() -> str:
    return str(random.randint(10**8, 10**9 - 1))


def _settle(done: Callable[[], bool]) -> None:
    """Wait up to 5 s for ``done()`` (processes take a moment to die or start)."""
    for _ in range(100):
        if done():
            return
        time.sleep(0.05)


def _start_sleep(runner: Runner) -> str:
    """Start ``sleep <marker>`` on ``runner`` without waiting for it; returns the marker."""
    marker = _marker()
    runner.send({"op": "exec", "argv": ["sleep", marker], "cwd": "/", "env": {}, "timeout": 60,
                 "cap": 100, "stdin": False})  # fmt: skip
    _settle(lambda: bool(_alive(f"sleep {marker}")))
    return marker


def test_frames_survive_any_chunking() -> None:
    frames = [({"id": 1, "op": "x"}, b""), ({"id": 2, "é": [1, None]}, bytes(range(256)) * 9)]
    stream = b"".join(encode_frame(h, b) for h, b in frames)
    reader, got = FrameReader(), []
    for i in range(len(stream)):
        got += reader.feed(stream[i : i + 1])
    assert got == frames
    with pytest.raises(ValueError, match="limit"):
        FrameReader(limit=100).feed(encode_frame({"id": 1}, b"x" * 200))
    with pytest.raises(ValueError, match="JSON object"):
        FrameReader().feed(encode_frame([1, 2]))  # type: ignore[arg-type]


def test_hello_names_the_runner_session(runner: Runner) -> None:
    assert runner.hello["pid"] == runner.proc.pid == runner.hello["sid"]
    assert os.getsid(runner.proc.pid) == runner.proc.pid


def test_exec_codes_streams_env_and_cwd(runner: Runner, tmp_path: Path) -> None:
    res = runner.exec(["bash", "-c", 'echo "$FOO|$PWD"; echo err >&2; exit 7'],
                      cwd=str(tmp_path), env={"FOO": "bar baz"})  # fmt: skip
    assert (res["code"], res["stdout"], res["stderr"]) == (7, f"bar baz|{tmp_path}\n".encode(),
                                                         b"err\n")  # fmt: skip
    assert not res["timed_out"] and not res["truncated"]
    assert runner.exec(["no-such-command-xyz"])["code"] == 127
    (tmp_path / "data").write_text("x")
    assert runner.exec([str(tmp_path / "data")])["code"] == 126  # not executable
    missing = runner.exec(["true"], cwd=str(tmp_path / "nope"))
    assert missing["code"] == 126 and b"chdir" in missing["stderr"]
    assert runner.exec(["bash", "-c", "kill -TERM $$"])["code"] == 143
    script = tmp_path / "plain"  # no #! line: run by /bin/sh, as execvp would
    script.write_text("echo from-sh\n")
    script.chmod(0o755)
    assert runner.exec([str(script)])["stdout"] == b"from-sh\n"


def test_stdin_and_output_cap(runner: Runner) -> None:
    big = os.urandom(3 * 2**20)
    assert runner.exec(["wc", "-c"], stdin=big)["stdout"].strip() == str(len(big)).encode()
    assert runner.exec(["cat"])["stdout"] == b""  # no stdin: /dev/null
    res = runner.exec(["bash", "-c", "head -c 5000000 /dev/zero | tr '\\0' y; printf END"],
                      cap=1000)  # fmt: skip
    assert res["truncated"] and len(res["stdout"]) == 1000 and res["stdout"].endswith(b"yEND")


def test_timeout_term_then_kill(runner: Runner) -> None:
    res = runner.exec(["sleep", "30"], timeout=0.3)
    assert (res["code"], res["timed_out"]) == (124, True)
    res = runner.exec(["bash", "-c", "trap '' TERM; sleep 30"], timeout=0.3)
    assert (res["code"], res["timed_out"]) == (137, True)
    assert runner.exec(["bash", "-c", "exit 124"])["timed_out"] is False


def test_python_scripts_on_stdin_run_in_a_fork_of_the_runner(runner: Runner,
                                                             tmp_path: Path) -> None:
    """``python3 - ARGS`` keeps the contract of a fresh interpreter, in a fork: the
    runner's flags (-I -S) show it is one, and the preloaded modules are already there."""
    script = b"""
import os, sys
print(sys.argv[1:], os.getcwd(), os.environ["FOO"], repr(sys.stdin.read()))
print(sys.flags.isolated, sys.flags.no_site, "json" in sys.modules, os.getppid())
print(sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
print(os.getpgid(0) == os.getpid(), file=sys.stderr)
"""
    res = runner.exec(["python3", "-", "a", "b c"], cwd=str(tmp_path), env={"FOO": "x"},
                      stdin=script)
    lines = res["stdout"].decode().splitlines()
    assert res["code"] == 0 and res["stderr"] == b"True\n"  # its own process group
    assert lines[0] == f"['a', 'b c'] {tmp_path} x ''"
    assert lines[1] == f"1 1 True {runner.hello['pid']}"
    assert lines[2] == "[0, 1, 2, 3]"  # 3 is the listing itself: nothing else inherited
    codes = {b"import sys; sys.exit(3)": (3, b""),
             b"raise SystemExit('bad input')": (1, b"bad input\n"),
             b"import sys; sys.exit()": (0, b"")}
    for src, (code, err) in codes.items():
        res = runner.exec(["python3", "-"], stdin=src)
        assert (res["code"], res["stderr"]) == (code, err), src
    boom = runner.exec(["python3", "-"], stdin=b"def f():\n    raise ValueError('boom')\nf()\n")
    assert boom["code"] == 1
    assert boom["stderr"].decode().splitlines() == [
        "Traceback (most recent call last):", '  File "<stdin>", line 3, in <module>',
        '  File "<stdin>", line 2, in f', "ValueError: boom"]
    sub = runner.exec(["python3", "-"], stdin=b"import subprocess; "
                      b"print(subprocess.run(['echo', 'child'], capture_output=True).stdout)")
    assert sub["stdout"] == b"b'child\\n'\n"
    slow = runner.exec(["python3", "-"], stdin=b"import time; time.sleep(30)", timeout=0.3)
    assert (slow["code"], slow["timed_out"]) == (124, True)
    assert runner.exec(["python3", "-"], stdin=b"print('still serving')")["code"] == 0


def test_group_leftovers_die_but_setsid_services_survive(runner: Runner, tmp_path: Path) -> None:
    left, service, up = _marker(), _marker(), tmp_path / "up"
    cmd = (f"sleep {left} & setsid bash -c 'touch {up}; exec sleep {service}' >/dev/null 2>&1 "
           f"</dev/null & until [ -e {up} ]; do sleep 0.01; done; echo started")
    assert runner.exec(["bash", "-c", cmd])["stdout"] == b"started\n"
    try:
        _settle(lambda: not _alive(f"sleep {left}"))
        assert _alive(f"sleep {left}") == []
        assert len(_alive(f"sleep {service}")) == 1
    finally:
        subprocess.run(["pkill", "-f", f"sleep {service}"])


def test_requests_run_concurrently(runner: Runner, tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    waits = runner.send({"op": "exec", "argv": ["bash", "-c", f"until [ -e {flag} ]; do "
                         "sleep 0.01; done; echo waited"], "cwd": "/", "env": {},
                         "timeout": 60, "cap": 100, "stdin": False})  # fmt: skip
    touches = runner.send({"op": "exec", "argv": ["touch", str(flag)], "cwd": "/", "env": {},
                           "timeout": 60, "cap": 100, "stdin": False})  # fmt: skip
    # the waiter can only end once `touch` has run: served one at a time, it would hang
    # until its timeout (code 124); which of the two answers first is a race
    answers = {h["id"]: (h, blob) for h, blob in (runner.next_answer(), runner.next_answer())}
    assert set(answers) == {waits, touches} and answers[touches][0]["code"] == 0
    assert answers[waits][1] == b"waited\n" and answers[waits][0]["code"] == 0


def test_stdin_eof_kills_running_commands() -> None:
    r = Runner()
    marker = _start_sleep(r)
    r.close()
    _settle(lambda: not _alive(f"sleep {marker}"))
    assert r.proc.returncode == 0 and _alive(f"sleep {marker}") == []


def test_a_new_runner_reaps_what_a_dead_one_left() -> None:
    dead = Runner()
    marker = _start_sleep(dead)
    os.kill(dead.proc.pid, signal.SIGKILL)
    dead.proc.wait()
    assert len(_alive(f"sleep {marker}")) == 1  # orphaned, still running
    fresh = Runner(reap=(dead.hello["sid"],))
    try:
        _settle(lambda: not _alive(f"sleep {marker}"))
        assert _alive(f"sleep {marker}") == []
    finally:
        fresh.close()


def test_file_verbs(runner: Runner, tmp_path: Path) -> None:
    target, other = tmp_path / "a/b/c.txt", tmp_path / "other.txt"
    other.write_text("other")
    (tmp_path / "link").symlink_to(other)
    files = [[str(target), 3], [str(tmp_path / "link"), 4]]
    assert "error" not in runner.answer(runner.send({"op": "write", "files": files}, b"abcnew!"))
    assert target.read_bytes() == b"abc" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "a/b").stat().st_mode) == 0o755
    assert (tmp_path / "link").read_bytes() == b"new!" and not (tmp_path / "link").is_symlink()
    assert other.read_text() == "other"  # the link was replaced, not written through

    def read(path: Path, max_bytes: int = 100) -> dict:
        return runner.answer(runner.send({"op": "read", "path": str(path), "max": max_bytes}))

    assert read(target)["blob"] == b"abc"
    os.mkfifo(tmp_path / "fifo")  # must not hang the runner
    errors = {"notfound": read(tmp_path / "nope"), "isdir": read(tmp_path / "a"),
              "toolarge": read(target, max_bytes=2), "notfile": read(tmp_path / "fifo")}
    assert {kind: res.get("error") for kind, res in errors.items()} == {k: k for k in errors}
    bad = runner.answer(runner.send({"op": "write", "files": [[str(tmp_path / "a"), 1]]}, b"x"))
    assert bad["error"] == "isdir"


def _tree(root: Path) -> list[tuple]:
    """(path, type, mode, link target, bytes) of everything below ``root``."""
    rows = []
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        data = p.read_bytes() if stat.S_ISREG(st.st_mode) else None
        link = os.readlink(p) if p.is_symlink() else None
        rows.append((str(p.relative_to(root)), stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                     link, data, st.st_mtime_ns if stat.S_ISREG(st.st_mode) else None))
    return rows


def test_snapshot_and_restore_trees(runner: Runner, tmp_path: Path) -> None:
    work, snap = tmp_path / "work", tmp_path / "snaps/one"
    (work / "d/e").mkdir(parents=True)
    (work / "d/e/deep.txt").write_text("deep")
    (work / ".hidden").write_text("h")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("d/e/deep.txt")
    os.mkfifo(work / "pipe")
    before = _tree(work)

    def op(name: str, src: Path, dst: Path) -> dict:
        _give(tmp_path)
        return runner.answer(runner.send({"op": name, "src": str(src), "dst": str(dst)}))

    assert "error" not in op("snapshot", work, snap)
    assert stat.S_IMODE(snap.parent.stat().st_mode) == 0o700
    for _ in range(2):  # restorable again and again, whatever happened meanwhile
        (work / "d/e/deep.txt").write_text("changed")
        (work / ".hidden").unlink()
        (work / "new/ro").mkdir(parents=True)
        (work / "new/ro/f").write_text("f")
        (work / "new/ro").chmod(0o500)
        (work / "new").chmod(0o000)
        assert "error" not in op("restore", snap, work)
        assert _tree(work) == before
    assert op("restore", tmp_path / "gone", work)["error"] == "notfound"


def test_the_runner_compiles_a_script_once_while_it_is_among_the_recent_ones():
    from environments.runner import pyfork

    verifier = b"print('verified')\n"
    first = pyfork._code(verifier)
    assert first is not None and pyfork._code(verifier) is first
    for n in range(pyfork.COMPILED_KEPT):
        pyfork._code(f"print({n})\n".encode())
    assert pyfork._code(verifier) is not first  # pushed out by newer scripts: compiled again
    assert pyfork._code(b"def (:\n") is None  # the child compiles it and reports the error


def test_the_runner_preloads_every_standard_module_a_verifier_or_probe_imports():
    """A module the fork imports again costs every verifier and probe run its import."""
    import ast
    import sys

    from environments.ecosystems import builtin_names, load_ecosystem
    from environments.runner import pyfork
    from schemas.verifier import Check
    from tasks.verify.verifier import render_reconstruct_verifier, render_verifier

    def imported(source: str) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        return names & set(sys.stdlib_module_names)

    checks = [Check(kind="answer", key="answer.txt", expected="1")]
    sources = [load_ecosystem(name).probe_source for name in builtin_names()]
    sources.append(render_verifier(checks, sources[0]))
    sources.append(render_reconstruct_verifier([], load_ecosystem("files"), "run.sh", 10.0))
    needed = set().union(*map(imported, sources)) - {"sys", "os", "builtins"}
    assert needed - set(pyfork.PRELOADED) == set()
