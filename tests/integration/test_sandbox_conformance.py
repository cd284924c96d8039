"""One conformance suite for every Sandbox backend, plus docker-only hardening checks.

Every backend runs every check; what a backend is known not to do is listed in
``KNOWN_GAPS`` (its checks assert the gap is still there, so closing one shows).  The
backends: ``local``, ``docker`` (verbs through the in-container runner), ``docker-exec``
(one ``docker exec`` per call), and ``labelled-local``, a backend from outside the project
found by import path (``tests/fixtures/backends``).  Real components only: the local
backends run host subprocesses; the docker ones need a running engine and the image
taskfactory/base:bookworm (tests marked ``docker``).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from environments.config import BackendConfig
from environments.docker.config import DockerConfig
from environments.local.pids import V1_ROOT, open_group
from environments.registry import make_provider, resolve_backend
from environments.sandbox import (
    Sandbox,
    SandboxClosedError,
    SandboxError,
    SandboxProvider,
    SandboxUnavailableError,
)

RUN_ID = f"pytest-conformance-{os.getpid()}"
# "docker": verbs through the in-container runner; "docker-exec": one docker exec per call
DOCKER_PATHS = {"docker": "runner", "docker-exec": "docker-exec"}
THIRD_PARTY = {"labelled-local": "tests.fixtures.backends.labelled_local:LabelledLocalConfig"}
LOCAL_GAPS = frozenset({
    "kills_what_cleared_its_environment",  # `env -i setsid` leaves the timeout kill
    "reaps_dead_owners",  # reap(None) is docker-only; close/reap(run_id) remove folders
})
KNOWN_GAPS: dict[str, frozenset[str]] = {
    "local": LOCAL_GAPS, "labelled-local": LOCAL_GAPS,
    "docker": frozenset(), "docker-exec": frozenset(),
}
BACKENDS = ["local", *THIRD_PARTY,
            *(pytest.param(b, marks=pytest.mark.docker) for b in DOCKER_PATHS)]


def _config(backend: str, **overrides: object) -> BackendConfig:
    if backend in DOCKER_PATHS:
        return DockerConfig(exec_via=DOCKER_PATHS[backend]).model_copy(update=overrides)
    return resolve_backend(THIRD_PARTY.get(backend, backend)).model_copy(update=overrides)


def _has(backend: str, check: str) -> bool:
    """False when ``check`` is one of ``backend``'s known gaps."""
    return check not in KNOWN_GAPS[backend]


def _docker_client():  # noqa: ANN202 - docker is imported lazily on purpose
    import docker

    return docker.from_env()


def _containers(run_id: str) -> list:
    label = f"taskfactory.run={run_id}"
    return _docker_client().containers.list(all=True, filters={"label": label})


class _Providers:
    """One provider per backend for the whole module, created on first use."""

    def __init__(self) -> None:
        self.made: dict[str, SandboxProvider] = {}

    def get(self, backend: str) -> SandboxProvider:
        if backend not in self.made:
            self.made[backend] = make_provider(_config(backend), RUN_ID)
        return self.made[backend]


@pytest.fixture(scope="module")
def providers() -> Iterator[_Providers]:
    ps = _Providers()
    yield ps
    for p in ps.made.values():
        p.close()
        p.reap(RUN_ID)
    if DOCKER_PATHS.keys() & ps.made.keys():
        assert _containers(RUN_ID) == []


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture()
def provider(providers: _Providers, backend: str) -> SandboxProvider:
    return providers.get(backend)


@pytest.fixture()
def sb(provider: SandboxProvider) -> Iterator[Sandbox]:
    with provider.sandbox(labels={"test": "conformance"}) as s:
        yield s


def _lines(sb: Sandbox, argv: list[str]) -> list[str]:
    res = sb.exec(argv, timeout=20)
    assert res.exit_code == 0, res
    return res.stdout.splitlines()


# ---- exec ------------------------------------------------------------------------------


def test_exit_codes_and_stream_separation(sb: Sandbox) -> None:
    res = sb.exec(["bash", "-c", "echo out; echo err >&2; echo out2; exit 7"])
    assert (res.exit_code, res.stdout, res.stderr) == (7, "out\nout2\n", "err\n")
    assert not res.timed_out and not res.truncated and res.duration_s >= 0
    assert sb.exec(["true"]).exit_code == 0
    assert sb.exec(["false"]).exit_code == 1
    missing = sb.exec(["no-such-command-xyz"])
    assert missing.exit_code == 127 and not missing.timed_out
    weird = sb.exec(["printf", "a\\377b"])  # invalid utf-8 is replaced, never raises
    assert weird.stdout == "a\ufffdb"


def test_stdin_is_delivered_then_closed(sb: Sandbox) -> None:
    assert sb.exec(["cat"], stdin=b"hello\nworld\n").stdout == "hello\nworld\n"
    big = os.urandom(3 * 2**20)
    res = sb.exec(["bash", "-c", "wc -c; echo done >&2"], stdin=big, timeout=60)
    assert (res.stdout.strip(), res.stderr) == (str(len(big)), "done\n")
    no_stdin = sb.exec(["cat"], timeout=10)  # empty stdin: returns at once, no hang
    assert no_stdin.exit_code == 0 and no_stdin.stdout == "" and not no_stdin.timed_out


def test_env_and_workdir(sb: Sandbox) -> None:
    assert _lines(sb, ["pwd"]) == [sb.workdir]
    res = sb.exec(["bash", "-c", 'echo "$FOO|$LANG"'], env={"FOO": "bar baz"})
    assert res.stdout == "bar baz|C.UTF-8\n"
    sb.write_files({"sub/dir/f.txt": b"x"})
    assert _lines(sb, ["pwd"]) == [sb.workdir]
    assert sb.exec(["pwd"], workdir="sub/dir").stdout.strip() == f"{sb.workdir}/sub/dir"
    assert sb.exec(["cat", "f.txt"], workdir=f"{sb.workdir}/sub/dir").stdout == "x"


def test_timeout_kills_the_process_tree(sb: Sandbox) -> None:
    marker = str(random.randint(10**8, 10**9 - 1))  # unique sleep length = argv marker
    t0 = time.monotonic()
    res = sb.exec(["bash", "-c", f"sleep {marker} & sleep {marker}; wait"], timeout=1)
    assert res.timed_out and res.exit_code in (124, 137), res
    assert 1 <= res.duration_s < 10 and time.monotonic() - t0 < 15
    for _ in range(50):
        alive = [line for line in _lines(sb, ["ps", "-eo", "args"]) if marker in line]
        if not alive:
            break
        time.sleep(0.1)
    assert alive == []


def _alive(sb: Sandbox, markers: list[str], wait_s: float = 5.0) -> list[str]:
    """The markers still in some process's argv after up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while True:
        args = _lines(sb, ["ps", "-eo", "args"])
        alive = [m for m in markers if any(m in line for line in args)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def test_timeout_kills_what_the_command_started_outside_its_group(sb: Sandbox,
                                                                   backend: str) -> None:
    kept, escapees = [str(random.randint(10**8, 10**9 - 1)) for _ in range(2)], [
        str(random.randint(10**8, 10**9 - 1)) for _ in range(4)]
    # started deliberately detached by a command that ends in time: a service survives
    ready = " && ".join(f"ps -eo args | grep -qx 'sleep {k}'" for k in kept)  # they left
    service = sb.exec(["bash", "-c", f"setsid nohup sleep {kept[0]} >/dev/null 2>&1 </dev/null &"
                       f" (env -i setsid sleep {kept[1]} >/dev/null 2>&1 </dev/null &);"
                       f" until {ready}; do sleep 0.05; done; echo ok"], timeout=20)
    assert service.stdout == "ok\n"
    setsid, double_fork, nohup, cleared = escapees
    script = (f"setsid sleep {setsid} >/dev/null 2>&1 </dev/null & "
              f"(setsid sh -c 'sleep {double_fork} & ' >/dev/null 2>&1 </dev/null &); "
              f"nohup sleep {nohup} >/dev/null 2>&1 </dev/null & "
              f"(env -i setsid sleep {cleared} >/dev/null 2>&1 </dev/null &); sleep 60")
    res = sb.exec(["bash", "-c", script], timeout=2)
    assert res.timed_out, res
    killed = _has(backend, "kills_what_cleared_its_environment")
    assert _alive(sb, escapees if killed else escapees[:3]) == []
    assert _alive(sb, [cleared], wait_s=0) == ([] if killed else [cleared])
    assert _alive(sb, kept, wait_s=0) == kept  # the earlier service is untouched
    sb.exec(["bash", "-c", f"pkill -f {kept[0]}; pkill -f {kept[1]}; pkill -f {cleared}"])


def test_background_leftovers_are_killed_when_the_command_exits(sb: Sandbox) -> None:
    marker = str(random.randint(10**8, 10**9 - 1))
    res = sb.exec(["bash", "-c", f"sleep {marker} & echo started"], timeout=20)
    assert res.stdout == "started\n" and res.exit_code == 0 and res.duration_s < 10
    time.sleep(0.3)
    assert not [line for line in _lines(sb, ["ps", "-eo", "args"]) if marker in line]


def test_output_cap_keeps_the_tail(providers: _Providers, backend: str) -> None:
    small = make_provider(_config(backend, output_cap_bytes=1000), RUN_ID)
    try:
        with small.sandbox() as s:
            res = s.exec(["bash", "-c", "yes | head -c 3000000; printf END"], timeout=30)
            assert res.exit_code == 0 and res.truncated
            assert len(res.stdout) == 1000 and res.stdout.endswith("y\nEND")
            res = s.exec(["bash", "-c", "head -c 3000000 /dev/zero | tr '\\0' x >&2; echo T >&2"])
            assert res.truncated and res.stdout == "" and res.stderr == "x" * 998 + "T\n"
            ok = s.exec(["bash", "-c", "head -c 1000 /dev/zero | tr '\\0' y"])
            assert not ok.truncated and ok.stdout == "y" * 1000
    finally:
        small.close()


def test_concurrent_execs_from_threads(sb: Sandbox) -> None:
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = sb.exec(["bash", "-c", f"sleep 0.2; echo {i}"], stdin=b"").stdout

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {i: f"{i}\n" for i in range(8)}


# ---- files -----------------------------------------------------------------------------


def test_write_and_read_files(sb: Sandbox) -> None:
    blob = bytes(range(256)) * 300
    files = {"a/b/c/data.bin": blob, "top.txt": b"hello\n", ".hidden/x": b"",
             f"{sb.workdir}/abs/y.txt": b"abs"}  # fmt: skip
    sb.write_files(files)
    assert sb.read_file("a/b/c/data.bin") == blob
    assert sb.read_file(f"{sb.workdir}/top.txt") == b"hello\n"
    assert sb.read_file(".hidden/x") == b""
    assert sb.read_file("abs/y.txt") == b"abs"
    assert sb.exec(["cat", "top.txt", "abs/y.txt"]).stdout == "hello\nabs"
    me = _lines(sb, ["id", "-u"])[0]
    owners = _lines(sb, ["stat", "-c", "%u %a %n", "a", "a/b/c", "a/b/c/data.bin", "top.txt"])
    assert owners == [f"{me} 755 a", f"{me} 755 a/b/c", f"{me} 644 a/b/c/data.bin",
                      f"{me} 644 top.txt"]  # fmt: skip
    sb.write_files({"top.txt": b"overwritten"})
    assert sb.read_file("top.txt") == b"overwritten"
    with pytest.raises(FileNotFoundError):
        sb.read_file("does/not/exist.txt")
    with pytest.raises(SandboxError):
        sb.read_file("a/b/c/data.bin", max_bytes=100)
    with pytest.raises(SandboxError):
        sb.read_file("a/b")  # a directory
    sb.exec(["ln", "-s", "top.txt", "link.txt"])
    assert sb.read_file("link.txt") == b"overwritten"


# ---- snapshot / restore ----------------------------------------------------------------


def test_snapshot_and_restore(sb: Sandbox) -> None:
    sb.write_files({"keep.txt": b"v1", ".env": b"SECRET=1", "d/e/deep.txt": b"deep",
                    "run.sh": b"#!/bin/sh\necho ran\n"})  # fmt: skip
    setup = "chmod 755 run.sh && ln -s d/e/deep.txt link && mkdir -p empty/.dir"
    assert sb.exec(["bash", "-c", setup]).exit_code == 0
    listing = "find . -printf '%p %y %m %l\\n' | sort"
    before = _lines(sb, ["bash", "-c", listing])
    snap = sb.snapshot()

    for round_ in range(2):  # a snapshot can be restored again and again
        mutate = (
            "echo v2 > keep.txt && rm .env && rm -r d && echo n > new.txt && "
            "mkdir -p newdir/x && echo h > .newhidden && chmod 600 run.sh && rm link && "
            "mkdir -p ro/sub && touch ro/sub/f && chmod 555 ro ro/sub"
        )
        assert sb.exec(["bash", "-c", mutate]).exit_code == 0, round_
        sb.restore(snap)
        assert _lines(sb, ["bash", "-c", listing]) == before
        assert sb.read_file("keep.txt") == b"v1" and sb.read_file(".env") == b"SECRET=1"
        assert sb.read_file("link") == b"deep"
        assert sb.exec(["./run.sh"]).stdout == "ran\n"
        for gone in ("new.txt", "newdir/x", ".newhidden"):
            with pytest.raises(FileNotFoundError):
                sb.read_file(gone)


def test_restore_rejects_foreign_snapshot(provider: SandboxProvider) -> None:
    with provider.sandbox() as a, provider.sandbox() as b:
        snap = a.snapshot()
        with pytest.raises(SandboxError):
            b.restore(snap)


# ---- lifecycle -------------------------------------------------------------------------


def test_close_is_idempotent_and_verbs_raise_after(provider: SandboxProvider) -> None:
    s = provider.open()
    snap = s.snapshot()
    s.close()
    s.close()
    assert s.closed
    verbs = [lambda: s.exec(["true"]), lambda: s.write_files({"a": b"b"}),
             lambda: s.read_file("a"), s.snapshot, lambda: s.restore(snap)]  # fmt: skip
    for verb in verbs:
        with pytest.raises(SandboxClosedError):
            verb()


def test_provider_close_closes_open_sandboxes(backend: str) -> None:
    run_id = f"{RUN_ID}-close-{uuid.uuid4().hex[:6]}"
    p = make_provider(_config(backend), run_id)
    a, b = p.open(), p.open()
    assert a.exec(["true"]).exit_code == 0
    done = threading.Event()
    threading.Thread(target=lambda: (p.close(), done.set())).start()  # like Ctrl-C handling
    assert done.wait(60)
    assert a.closed and b.closed
    with pytest.raises(SandboxClosedError):
        a.exec(["true"])
    with pytest.raises(SandboxClosedError):
        p.open()
    p.close()  # idempotent
    if backend in DOCKER_PATHS:
        assert _containers(run_id) == []
    else:
        assert not os.path.exists(a.root) and not os.path.exists(b.root)  # type: ignore[attr-defined]


def test_reap_run_id_removes_leftovers(backend: str) -> None:
    run_id = f"{RUN_ID}-reap-{uuid.uuid4().hex[:6]}"
    crashed = make_provider(_config(backend), run_id)
    leftovers = [crashed.open(labels={"leftover": "yes"}) for _ in range(2)]
    where = [getattr(s, "root", None) for s in leftovers]
    del crashed, leftovers  # dropped without closing, as if the process had died
    if backend in DOCKER_PATHS:
        assert len(_containers(run_id)) == 2
    fresh = make_provider(_config(backend), f"{run_id}-other")
    assert fresh.reap(run_id) == 2
    assert fresh.reap(run_id) == 0
    if backend in DOCKER_PATHS:
        assert _containers(run_id) == []
    else:
        assert not any(os.path.exists(w) for w in where if w)
    if not _has(backend, "reaps_dead_owners"):
        assert fresh.reap(None) == 0  # documented
    fresh.close()


def test_sandbox_context_manager_closes(provider: SandboxProvider) -> None:
    with provider.sandbox() as s:
        assert s.exec(["true"]).exit_code == 0
    assert s.closed


# ---- local backends only ---------------------------------------------------------------


@pytest.mark.parametrize("local", ["local", *THIRD_PARTY])
def test_local_paths_cannot_escape(providers: _Providers, local: str) -> None:
    with providers.get(local).sandbox() as s:
        # the sandbox root (workspace/, home/, tmp/, ...) is reachable, nothing above it
        for bad in ("../../outside.txt", "/etc/passwd-tf", "a/../../../x"):
            with pytest.raises(SandboxError):
                s.write_files({bad: b"x"})
        with pytest.raises(SandboxError):
            s.read_file("/etc/hostname")
        s.exec(["bash", "-c", "ln -s /etc etc-link && ln -s /etc/hostname host-link"])
        for bad in ("etc-link/tf-x", "host-link"):  # symlinks out of the sandbox
            with pytest.raises(SandboxError):
                s.write_files({bad: b"x"})
        with pytest.raises(SandboxError):
            s.read_file("host-link")
        s.write_files({"/workspace/alias.txt": b"alias"})  # docker's workdir maps here
        assert s.read_file("alias.txt") == b"alias"



@pytest.mark.parametrize("local", ["local", *THIRD_PARTY])
def test_local_rlimits_hold_and_no_python_runs_between_fork_and_exec(
        providers: _Providers, local: str, tmp_path: Path) -> None:
    """The command runs under the configured rlimits, and this process's at-fork hooks
    never run in its child: a Ctrl-C to the terminal's process group arriving between
    fork and exec would otherwise print a traceback from one of them."""
    seen = tmp_path / "forked"
    os.register_at_fork(after_in_child=lambda: _AT_FORK and seen.touch())
    _AT_FORK.append(True)
    try:
        with providers.get(local).sandbox() as s:
            res = s.exec(["bash", "-c", "ulimit -v; ulimit -t; ulimit -f"])
    finally:
        _AT_FORK.clear()
    cfg = _config(local)
    # bash reports -v and -f in KiB (-f in 1024-byte blocks), -t in seconds
    assert res.stdout.split() == [str(cfg.memory_mb * 1024), str(cfg.cpu_seconds),
                                  str(cfg.max_file_mb * 1024)]
    assert not seen.exists(), "Python ran in the child between fork and exec"


_AT_FORK: list[bool] = []
"""Set while the test above runs: at-fork hooks cannot be unregistered."""


@pytest.mark.parametrize("local", ["local", *THIRD_PARTY])
def test_local_pids_limit_holds_where_the_host_allows_it(providers: _Providers,
                                                         local: str) -> None:
    """As root (CI), each local sandbox has its own pids group: spawning past the limit
    fails inside the command, and closing the sandbox kills what is left and removes it."""
    probe = open_group("probe-" + uuid.uuid4().hex[:8])
    if probe is None:
        assert os.geteuid() != 0 or not os.path.isdir(V1_ROOT), "root, yet no pids group"
        pytest.skip("this host does not let this user make a pids cgroup")
    probe.remove()
    with providers.get(local).sandbox() as s:
        group = s._pids  # type: ignore[attr-defined]
        spawn = s.exec(["bash", "-c", "for i in $(seq 300); do sleep 3 & done; wait"],
                       timeout=20)
        assert "Resource temporarily unavailable" in spawn.stderr  # the pids limit bites
        left = s.exec(["bash", "-c", "setsid sh -c 'echo $$ > p; exec sleep 60' >/dev/null "
                       "2>&1 </dev/null & until [ -s p ]; do sleep 0.01; done; cat p"],
                      timeout=10)  # out of the command's group: only the cgroup holds it
        assert left.exit_code == 0 and _running(int(left.stdout))
    assert not os.path.exists(group.path)
    assert not _running(int(left.stdout))  # closing the sandbox killed the leftover


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan's zombie waits for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

# ---- docker hardening ------------------------------------------------------------------


@pytest.fixture(params=list(DOCKER_PATHS))
def dsb(providers: _Providers, request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with providers.get(request.param).sandbox(labels={"test": "hardening"}) as s:
        yield s


@pytest.mark.docker
def test_docker_runs_as_uid_1000_without_capabilities(dsb: Sandbox) -> None:
    assert _lines(dsb, ["id", "-u"]) == ["1000"] and _lines(dsb, ["id", "-g"]) == ["1000"]
    status = dict(line.split(":\t", 1) for line in _lines(dsb, ["cat", "/proc/self/status"]))
    assert status["CapEff"] == "0000000000000000" and status["CapPrm"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"


@pytest.mark.docker
def test_docker_has_no_network(dsb: Sandbox) -> None:
    res = dsb.exec(["curl", "-sS", "-m", "3", "http://1.1.1.1"], timeout=15)
    assert res.exit_code != 0 and not res.timed_out
    assert _lines(dsb, ["ls", "/sys/class/net"]) == ["lo"]


@pytest.mark.docker
def test_docker_fork_bomb_is_contained(dsb: Sandbox) -> None:
    pids_max = dsb.exec(["bash", "-c", "cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max"])
    assert "256" in pids_max.stdout.split()
    res = dsb.exec(["bash", "-c", ":(){ :|:& };:"], timeout=5)
    assert res.duration_s < 30
    for _ in range(30):
        ok = dsb.exec(["echo", "ok"], timeout=10)
        if ok.exit_code == 0:
            break
        time.sleep(1)
    assert ok.stdout == "ok\n"
    assert len(_lines(dsb, ["ps", "-e", "--no-headers"])) < 20  # the bomb is gone
    spawn = dsb.exec(["bash", "-c", "for i in $(seq 300); do sleep 30 & done; wait"], timeout=20)
    assert "Resource temporarily unavailable" in spawn.stderr  # the pids limit bites


@pytest.mark.docker
def test_docker_memory_limit(dsb: Sandbox) -> None:
    res = dsb.exec(["python3", "-c", "x = bytearray(2*1024**3)"], timeout=60)
    assert res.exit_code != 0 and not res.timed_out, res
    assert dsb.exec(["echo", "alive"]).stdout == "alive\n"


@pytest.mark.docker
def test_docker_workdir_is_capped_and_in_memory(dsb: Sandbox) -> None:
    cap = DockerConfig().workdir_mb
    assert _lines(dsb, ["stat", "-f", "-c", "%T", "."]) == ["tmpfs"]
    assert _lines(dsb, ["stat", "-c", "%U %a", "."]) == ["agent 755"]  # as in the image
    fill = dsb.exec(["dd", "if=/dev/zero", "of=big", "bs=1M", f"count={cap + 8}"], timeout=60)
    assert fill.exit_code != 0 and "No space left on device" in fill.stderr, fill
    assert dsb.exec(["rm", "big"]).exit_code == 0
    dsb.write_files({"after.txt": b"room again"})  # the sandbox stays usable
    assert dsb.read_file("after.txt") == b"room again"
    snap = dsb.snapshot()  # snapshots live in memory as well, outside the workdir
    assert _lines(dsb, ["stat", "-f", "-c", "%T", "/tmp/.tf-snap"]) == ["tmpfs"]
    dsb.write_files({"after.txt": b"changed"})
    dsb.restore(snap)
    assert dsb.read_file("after.txt") == b"room again"


@pytest.mark.docker
def test_docker_writable_places_are_capped_and_never_reach_the_disk(dsb: Sandbox) -> None:
    cap = DockerConfig().tmp_mb
    for place in ("/tmp", "/var/tmp", "/run/lock", "/home/agent"):
        assert _lines(dsb, ["stat", "-f", "-c", "%T", place]) == ["tmpfs"], place
        fill = dsb.exec(["dd", "if=/dev/zero", f"of={place}/big", "bs=1M", "count=1024"],
                        timeout=60)  # 1 GiB
        assert fill.exit_code != 0 and "No space left on device" in fill.stderr, (place, fill)
        size = int(_lines(dsb, ["stat", "-c", "%s", f"{place}/big"])[0])
        assert size <= cap * 2**20, place
        assert dsb.exec(["rm", f"{place}/big"]).exit_code == 0
    for elsewhere in ("/etc/tf-x", "/opt/tf-x", "/var/lib/tf-x", "/tf-x"):
        res = dsb.exec(["touch", elsewhere])
        assert res.exit_code != 0 and "Read-only file system" in res.stderr, res
    [listed] = _docker_client().api.containers(  # type: ignore[attr-defined]
        all=True, size=True, filters={"id": dsb.container_id})
    assert listed.get("SizeRw", 0) < 2**20  # the container's disk layer holds nothing of it
    assert _lines(dsb, ["stat", "-c", "%a", "/tmp"]) == ["1777"]
    assert _lines(dsb, ["stat", "-c", "%U %a", "/home/agent"]) == ["agent 755"]
    dsb.write_files({"/tmp/after.txt": b"room again"})  # still usable, by either path
    assert dsb.read_file("/tmp/after.txt") == b"room again"


@pytest.mark.docker
def test_docker_scratch_volumes_go_with_their_container() -> None:
    client = _docker_client()
    provider = make_provider(DockerConfig(reuse=False), f"{RUN_ID}-volumes")
    with provider.sandbox(labels={"test": "volume"}) as s:
        mounts = client.containers.get(s.container_id).attrs["Mounts"]  # type: ignore[attr-defined]
        assert {(m["Type"], m["Destination"]) for m in mounts} == {
            ("volume", p) for p in ("/workspace", "/tmp", "/var/tmp", "/run/lock", "/home/agent")}
        assert all(client.volumes.get(m["Name"]) for m in mounts)
    import docker.errors

    for m in mounts:
        with pytest.raises(docker.errors.NotFound):
            client.volumes.get(m["Name"])
    provider.close()


_MESS = ("mkdir -p ro/in && touch ro/in/f && chmod 555 ro/in ro && chmod 700 . && "
         "touch /tmp/t /var/tmp/t /run/lock/t /home/agent/.profile /dev/shm/t && "
         "setsid sleep 600 </dev/null >/dev/null 2>&1 & nohup sleep 600 >/dev/null 2>&1 &")
_SERVER_TIME_WAIT = (  # the server closes first: its port is left in TIME_WAIT
    "import socket; s = socket.create_server(('127.0.0.1', 8123)); "
    "c = socket.create_connection(('127.0.0.1', 8123)); a, _ = s.accept(); a.close(); "
    "c.recv(1); c.close()")


@pytest.mark.docker
def test_docker_reuses_a_container_only_after_a_clean_reset() -> None:
    """A closed sandbox's container serves the next one once its reset left nothing a
    fresh container would not have: no process but the runner's, every writable place
    empty (modes as new), no old snapshot.  A server port left in TIME_WAIT is something
    a fresh container would not have: that container is removed instead."""
    import docker.errors

    run_id = f"{RUN_ID}-reuse-{uuid.uuid4().hex[:6]}"
    provider = make_provider(DockerConfig(), run_id)
    first = provider.open()
    first.write_files({"a/b.txt": b"x"})
    assert first.exec(["bash", "-c", _MESS]).exit_code == 0
    snap = first.snapshot()
    first.close()

    second = provider.open()
    assert second.container_id == first.container_id  # type: ignore[attr-defined]
    places = ["/workspace", "/tmp", "/tmp/.tf-snap", "/var/tmp", "/run/lock", "/home/agent",
              "/dev/shm"]
    listing = _lines(second, ["find", *places, "-mindepth", "1", "-not", "-path",
                              "/tmp/.tf-snap"])
    assert listing == []
    assert _lines(second, ["stat", "-c", "%a", "/workspace", "/home/agent", "/tmp/.tf-snap"]) \
        == ["755", "755", "700"]
    commands = _lines(second, ["ps", "-e", "--no-headers", "-o", "comm"])
    assert sorted(commands) == ["docker-init", "ps", "python3", "sh"]  # the runner's, and ps
    with pytest.raises(SandboxError):
        second.restore(snap)

    assert second.exec(["python3", "-c", _SERVER_TIME_WAIT]).exit_code == 0
    second.close()
    third = provider.open()
    assert third.container_id != first.container_id  # type: ignore[attr-defined]
    with pytest.raises(docker.errors.NotFound):
        _docker_client().containers.get(first.container_id)  # type: ignore[attr-defined]
    third.close()
    assert len(_containers(run_id)) == 1  # kept for the next sandbox, until the close
    provider.close()
    assert _containers(run_id) == []


@pytest.mark.docker
def test_docker_reuses_a_container_whose_runner_the_sandbox_user_killed() -> None:
    """An agent may end its own runner (``kill -9 -1``, or a ``pkill`` whose pattern
    matches it, as the hostile control's verifier killer does): the runner started in its
    place resets the container as well, and the container serves the next sandbox (it was
    removed, and every candidate paid for a new container, ~300 ms of engine CPU)."""
    run_id = f"{RUN_ID}-reuse-killed-{uuid.uuid4().hex[:6]}"
    provider = make_provider(DockerConfig(), run_id)
    first = provider.open()
    assert first.exec(["sh", "-c", "kill -9 -1; sleep 5"], timeout=30).exit_code != 0
    assert first.exec(["sh", "-c", "echo left > /tmp/left; sleep 300 &"]).ok
    assert first.exec(["true"], privileged=True).ok
    first.close()

    second = provider.open()
    assert second.container_id == first.container_id  # type: ignore[attr-defined]
    assert _lines(second, ["find", "/tmp", "-mindepth", "1", "-not", "-path",
                           "/tmp/.tf-snap"]) == []
    agent = _lines(second, ["ps", "-u", "1000", "--no-headers", "-o", "comm"])
    assert sorted(agent) == ["ps", "python3"]  # the runner, and ps: no sleep left
    second.close()
    provider.close()
    assert _containers(run_id) == []


@pytest.mark.docker
def test_docker_container_config_and_labels() -> None:
    run_id = f"{RUN_ID}-labels"
    with make_provider(DockerConfig(), run_id) as provider, \
            provider.sandbox(labels={"test": "hardening"}) as dsb:
        c = _docker_client().containers.get(dsb.container_id)  # type: ignore[attr-defined]
    labels = c.labels
    assert labels["taskfactory.run"] == run_id and labels["test"] == "hardening"
    assert labels["taskfactory.owner_pid"] == str(os.getpid())
    hc = c.attrs["HostConfig"]
    assert hc["NetworkMode"] == "none" and hc["CapDrop"] == ["ALL"] and hc["Init"] is True
    assert hc["SecurityOpt"] == ["no-new-privileges"] and hc["PidsLimit"] == 256
    assert hc["Memory"] == hc["MemorySwap"] == 512 * 2**20 and hc["NanoCpus"] == 10**9
    assert hc["LogConfig"]["Type"] == "none" and c.attrs["Config"]["User"] == "0:0"
    assert sorted(hc["CapAdd"]) == sorted(DockerConfig().admin_caps)


_CAPS = "grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs)' /proc/self/status"


@pytest.mark.docker
def test_docker_commands_hold_no_capability_and_privileged_ones_only_the_admin_caps(
        dsb: Sandbox) -> None:
    """The sandbox user holds no capability (and cannot gain one); a privileged command
    runs as root with the admin capabilities only."""
    agent = dict(line.split(":\t", 1) for line in _lines(dsb, ["sh", "-c", _CAPS]))
    assert agent["Uid"].split() == ["1000"] * 4 and int(agent["CapEff"], 16) == 0
    assert agent["NoNewPrivs"] == "1"
    root = dsb.exec(["sh", "-c", _CAPS], privileged=True)
    fields = dict(line.split(":\t", 1) for line in root.stdout.splitlines())
    assert fields["Uid"].split() == ["0"] * 4
    # CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, KILL 5, SETGID 6, SETUID 7
    assert int(fields["CapEff"], 16) == int(fields["CapBnd"], 16) == 0b11101011
    assert dsb.agent_user == "1000:1000" and dsb.logs_dir == "/logs/verifier"


@pytest.mark.docker
def test_docker_a_command_that_kills_every_process_of_its_user_leaves_the_sandbox_working(
        dsb: Sandbox) -> None:
    """``kill -9 -1`` as the sandbox user ends the runner, not the container: the command
    fails, the next one runs in a new runner."""
    done = dsb.exec(["sh", "-c", "kill -9 -1; sleep 5"], timeout=30)
    assert done.exit_code != 0
    again = dsb.exec(["sh", "-c", "echo alive; id -u"])
    assert again.ok and again.stdout.split() == ["alive", "1000"]


@pytest.mark.docker
def test_docker_logs_folder_is_open_to_every_user_and_reopened_after_a_privileged_command(
        dsb: Sandbox) -> None:
    assert dsb.exec(["sh", "-c", "echo 1 > /logs/verifier/reward.txt"]).ok
    snap = dsb.snapshot()
    taken = "rm -f /logs/verifier/*; chown 0:0 /logs/verifier; chmod 755 /logs/verifier; " \
            "echo 0 > /logs/verifier/reward.txt"
    assert dsb.exec(["sh", "-c", taken], privileged=True).ok
    assert not dsb.exec(["sh", "-c", "echo 1 > /logs/verifier/reward.txt"]).ok
    dsb.restore(snap)
    assert _lines(dsb, ["sh", "-c", "ls -A /logs/verifier; stat -c %a /logs/verifier"]) == [
        "777"]


@pytest.mark.docker
def test_docker_what_the_sandbox_user_left_running_is_killed_after_a_privileged_command(
        dsb: Sandbox) -> None:
    """The restore after a privileged command KILLs the sandbox user's processes left
    outside any command's group (its runner aside), on either path."""
    snap = dsb.snapshot()
    left = "setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 0.2"
    assert dsb.exec(["bash", "-c", left]).ok
    assert "sleep" in _lines(dsb, ["ps", "-u", "1000", "-o", "comm="])
    assert dsb.exec(["true"], privileged=True).ok
    dsb.restore(snap)
    assert "sleep" not in _lines(dsb, ["ps", "-u", "1000", "-o", "comm="])


@pytest.mark.docker
def test_docker_write_outside_workdir(dsb: Sandbox) -> None:
    dsb.write_files({"/tmp/tf-out/sub/f.txt": b"out"})
    assert dsb.read_file("/tmp/tf-out/sub/f.txt") == b"out"
    assert _lines(dsb, ["stat", "-c", "%u", "/tmp/tf-out/sub", "/tmp/tf-out/sub/f.txt"]) == [
        "1000", "1000"]  # fmt: skip
    assert _lines(dsb, ["stat", "-c", "%a", "/tmp"]) == ["1777"]  # untouched


@pytest.mark.docker
def test_docker_missing_image_is_unavailable() -> None:
    p = make_provider(DockerConfig(image="taskfactory/does-not-exist:nope"), f"{RUN_ID}-noimg")
    expected = r"base image taskfactory/does-not-exist:nope is missing.*`make image`"
    with pytest.raises(SandboxUnavailableError, match=expected):
        p.open()
    p.close()


@pytest.mark.docker
def test_docker_reap_without_run_id_removes_dead_owners(providers: _Providers) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_id = f"{RUN_ID}-orphan-{uuid.uuid4().hex[:6]}"
    labels = {"taskfactory.run": run_id, "taskfactory.owner_pid": str(dead.pid)}
    _docker_client().containers.create("taskfactory/base:bookworm", ["true"], labels=labels)
    live = providers.get("docker").open()  # owned by us: must survive reap(None)
    try:
        assert providers.get("docker").reap(None) >= 1
        assert _containers(run_id) == []
        assert live.exec(["true"]).exit_code == 0
    finally:
        live.close()


_NON_DUMPABLE = ("setsid python3 -c 'import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
                 "time.sleep(600)' </dev/null >/dev/null 2>&1 & sleep 0.5")


@pytest.mark.docker
def test_a_non_dumpable_process_is_killed_by_the_reset_and_the_root_cleanup() -> None:
    """A process that makes itself non-dumpable owns no /proc entry of its own (root does):
    the reset and the cleanup after a privileged command still find it as the sandbox
    user's and kill it."""
    run_id = f"{RUN_ID}-nondump-{uuid.uuid4().hex[:6]}"
    provider = make_provider(DockerConfig(), run_id)
    try:
        first = provider.open()
        snap = first.snapshot()
        assert first.exec(["bash", "-c", _NON_DUMPABLE]).exit_code == 0
        assert first.exec(["true"], privileged=True).exit_code == 0
        first.restore(snap)  # the root cleanup
        users = _lines(first, ["ps", "-e", "--no-headers", "-o", "user,comm"])
        assert sorted(users).count("agent    python3") <= 1, users  # the runner alone
        assert first.exec(["bash", "-c", _NON_DUMPABLE]).exit_code == 0
        container = first.container_id  # type: ignore[attr-defined]
        first.close()  # the reset
        second = provider.open()
        if second.container_id == container:  # type: ignore[attr-defined]
            users = _lines(second, ["ps", "-e", "--no-headers", "-o", "user,comm"])
            assert [u for u in users if u.startswith("agent")] == [
                "agent    python3", "agent    ps"], users  # the runner's, and ps
        second.close()
    finally:
        provider.close()
