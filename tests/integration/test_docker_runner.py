"""The docker backend's in-container runner: how it fails and recovers, on the real engine.

The contract itself is checked for both docker paths by test_sandbox_conformance.py; here
the runner is killed, cut off, OOM-killed and left out, and every time the sandbox must
answer (a failed result, never a hang) and go on with a fresh runner or plain docker exec.
"""

from __future__ import annotations

import io
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from environments.docker.config import DockerConfig
from environments.registry import make_provider
from environments.sandbox import (
    ExecResult,
    InfrastructureError,
    Sandbox,
    SandboxError,
    SandboxProvider,
)

pytestmark = pytest.mark.docker

RUN_ID = f"pytest-runner-{os.getpid()}"
RUNNER_ARGV = "python3 -I -S -c import sys; exec(sys.stdin.buffer.read("
NO_PYTHON_IMAGE = "taskfactory/test-no-python:1"


@pytest.fixture(scope="module")
def provider() -> Iterator[SandboxProvider]:
    p = make_provider(DockerConfig(), RUN_ID)
    yield p
    p.close()
    p.reap(RUN_ID)


@pytest.fixture()
def sb(provider: SandboxProvider) -> Iterator[Sandbox]:
    with provider.sandbox(labels={"test": "runner"}) as s:
        yield s


def _ps(sb: Sandbox) -> list[str]:
    res = sb.exec(["ps", "-eo", "pid,args", "--no-headers"], timeout=20)
    assert res.exit_code == 0, res
    return res.stdout.splitlines()


def _runners(sb: Sandbox) -> list[str]:
    """The runner processes (not the shell that made the first one the container's command)."""
    return [line for line in _ps(sb) if line.split(None, 1)[1].startswith(RUNNER_ARGV)]


def _settle(done: Callable[[], bool]) -> bool:
    for _ in range(100):
        if done():
            return True
        time.sleep(0.05)
    return False


def _running(sb: Sandbox, marker: str) -> list[str]:
    """The ``sleep <marker>`` processes (not the shells that started them)."""
    return [line for line in _ps(sb) if line.split(None, 1)[1] == f"sleep {marker}"]


def _in_thread(sb: Sandbox, argv: list[str], timeout: float = 60) -> Callable[[], ExecResult]:
    """Run ``argv`` in a thread; returns a function giving its result (None while running)."""
    box: list[ExecResult] = []
    t = threading.Thread(target=lambda: box.append(sb.exec(argv, timeout=timeout)), daemon=True)
    t.start()

    def result() -> ExecResult:
        t.join(60)
        assert box, "exec did not return"
        return box[0]

    return result


def test_runner_killed_by_a_command(sb: Sandbox) -> None:
    marker, service, up = (str(random.randint(10**8, 10**9 - 1)) for _ in range(3))
    start = (f"setsid nohup bash -c 'touch /tmp/{up}; exec sleep {service}' >/dev/null 2>&1 "
             f"</dev/null & until [ -e /tmp/{up} ]; do sleep 0.01; done")  # fmt: skip
    assert sb.exec(["bash", "-c", start]).exit_code == 0
    in_flight = _in_thread(sb, ["bash", "-c", f"sleep {marker} & sleep {marker}; wait"])
    assert _settle(lambda: len(_running(sb, marker)) == 2)
    (old_runner,) = _runners(sb)

    killer = sb.exec(["bash", "-c", "kill -KILL $PPID; sleep 5"])  # $PPID is the runner
    assert killer.exit_code == 137 and not killer.timed_out, killer  # SIGKILLed runner
    assert "runner was lost" in killer.stderr
    lost = in_flight()
    assert lost.exit_code == 137 and not lost.ok and "runner was lost" in lost.stderr

    assert sb.exec(["echo", "ok"]).stdout == "ok\n"  # a new runner, which reaped the old one
    assert _settle(lambda: not _running(sb, marker))
    runners = _runners(sb)
    assert len(runners) == 1 and runners != [old_runner]
    assert len(_running(sb, service)) == 1  # a setsid'd service survives all of this

    # the first runner was the container's command; this one was started by docker exec
    again = sb.exec(["bash", "-c", "kill -KILL $PPID; sleep 5"])
    assert again.exit_code == 137 and "runner was lost" in again.stderr, again
    assert sb.exec(["echo", "ok"]).stdout == "ok\n" and len(_runners(sb)) == 1


def test_runner_cut_off_on_the_host_side(sb: Sandbox) -> None:
    marker = str(random.randint(10**8, 10**9 - 1))
    in_flight = _in_thread(sb, ["sleep", marker])
    assert _settle(lambda: len(_running(sb, marker)) == 1)
    sb._runners.get().abandon("cut off by the test")  # type: ignore[attr-defined]
    lost = in_flight()
    assert lost.exit_code == 125 and "cut off by the test" in lost.stderr
    assert sb.exec(["true"]).exit_code == 0
    assert _settle(lambda: not _running(sb, marker))  # the runner saw EOF and killed it


def test_runner_chosen_by_the_oom_killer(sb: Sandbox) -> None:
    hog = "echo 1000 > /proc/$PPID/oom_score_adj; python3 -c 'x = bytearray(2 * 1024**3)'"
    res = sb.exec(["bash", "-c", hog], timeout=60)
    assert res.exit_code == 137 and not res.timed_out, res
    assert "runner was lost" in res.stderr
    assert sb.exec(["echo", "alive"]).stdout == "alive\n"


def test_output_is_capped_inside_the_container() -> None:
    small = make_provider(DockerConfig(output_cap_bytes=1000), f"{RUN_ID}-cap")
    try:
        with small.sandbox() as s:
            assert s.exec(["true"]).exit_code == 0
            channel = s._runners.get()  # type: ignore[attr-defined]
            before = channel.received
            res = s.exec(["bash", "-c", "head -c 50000000 /dev/zero; echo END"], timeout=60)
            assert res.truncated and len(res.stdout) == 1000 and res.stdout.endswith("END\n")
            assert channel.received - before < 64 * 1024  # not 50 MB over the channel
    finally:
        small.close()


@pytest.mark.parametrize("exec_via", ["runner", "docker-exec"])
def test_files_the_sandbox_user_cannot_touch_go_through_the_engine(exec_via: str) -> None:
    p = make_provider(DockerConfig(exec_via=exec_via), f"{RUN_ID}-root")  # type: ignore[arg-type]
    try:
        with p.sandbox() as s:
            assert b"root:" in s.read_file("/etc/shadow")  # root-only, as before the runner
            s.exec(["bash", "-c", "mkdir locked && chmod 555 locked"])  # not writable by us
            s.write_files({"locked/tf-x.txt": b"x", "mine.txt": b"m"})
            assert s.exec(["stat", "-c", "%u", "locked/tf-x.txt"]).stdout == "1000\n"
            with pytest.raises(SandboxError, match="(?i)read-only") as refused:  # the root fs
                s.write_files({"/opt/tf-x.txt": b"x"})
            assert not isinstance(refused.value, InfrastructureError)
            s.exec(["mkdir", "-p", "adir/sub"])
            s.write_files({"adir": b"now a file"})  # a directory is replaced, as tar does
            assert s.read_file("adir") == b"now a file" and s.read_file("mine.txt") == b"m"
    finally:
        p.close()


def _no_python_image() -> str:
    import docker

    client = docker.from_env()
    dockerfile = ("FROM taskfactory/base:bookworm\nUSER root\n"
                  "RUN rm -f /usr/bin/python3*\nUSER 1000:1000\n")  # fmt: skip
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=NO_PYTHON_IMAGE, rm=True,
                        network_mode="none", labels={"taskfactory.image": "test"})  # fmt: skip
    return NO_PYTHON_IMAGE


def test_without_python3_the_sandbox_falls_back_to_docker_exec(
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = make_provider(DockerConfig(image=_no_python_image()), f"{RUN_ID}-nopy")
    try:
        with p.sandbox() as s, caplog.at_level(logging.WARNING):
            res = s.exec(["bash", "-c", "echo out; echo err >&2; exit 3"])
            assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
            assert "no command runner" in caplog.text
            s.write_files({"a/b.txt": b"via the engine"})
            assert s.read_file("a/b.txt") == b"via the engine"
            assert s.exec(["cat", "a/b.txt"]).stdout == "via the engine"
    finally:
        p.close()


def test_attaching_to_a_container_that_already_writes_loses_no_byte() -> None:
    """The engine can send output in the same read as the attach's HTTP headers; the
    bytes the HTTP client buffered come first, so the multiplexed stream stays aligned
    (a lost byte shows as a frame header of an unknown stream)."""
    import docker

    from environments.docker.exec_path import StreamDemux, attach_container

    api = docker.APIClient()
    line = b"0123456789abcdef\n"
    cid = api.create_container(DockerConfig().image, ["sh", "-c", f"yes {line.decode().strip()}"],
                               labels={"taskfactory.run": RUN_ID})["Id"]
    api.start(cid)
    try:
        for _ in range(40):
            sock, close, early = attach_container(api, cid)
            try:
                got, demux = bytearray(), StreamDemux()
                chunk = early
                while len(got) < 1 << 16:
                    for stream, data in demux.feed(chunk):
                        assert stream == 1, f"misaligned stream: frame of stream {stream}"
                        got += data
                    chunk = sock.recv(1 << 16)
                start = got.index(b"\n") + 1  # the stream is joined mid-line
                assert bytes(got[start:]).startswith(line * 100)
            finally:
                close()
    finally:
        api.remove_container(cid, force=True)
