"""Crafted ecosystem folders whose code attacks the host: nothing of the host is reachable
from a user's seed or sampler unless the user trusts the folder.

A hostile seed tries to read a canary file of the host (by absolute path and by a path
relative to its folder), ``/etc/shadow`` and the host's environment, to talk to the
Docker socket, to reach a TCP server the test runs on the host, to write into a guard
folder, its own folder and ``/tmp``, to kill its sandbox, and to smuggle a pickle (or an
endless answer) through the channel.  The guard folder's and the ecosystem folder's
digests, the canary and the listener show what reached the host.  The same seed with
``TASKFACTORY_TRUST_ECOSYSTEMS=1`` does read the canary: what trusting a folder means,
and proof that the checks can fail.  Real engine, real base image.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import docker
import pytest

from environments.ecosystems import BUILTIN_DIR, EcosystemError, load_ecosystem
from environments.ecosystems.code import TRUST
from environments.ecosystems.sandbox import USERCODE_LABEL
from environments.ecosystems.usercode import UserCodeError

pytestmark = pytest.mark.docker
INVENTORY = Path(__file__).parents[1] / "fixtures" / "ecosystems" / "inventory"
HOSTILE = '''
import json, os, pathlib, pickle, socket, struct

CANARY, GUARD, PORT, HOSTS, TOKEN = {canary!r}, {guard!r}, {port}, {hosts!r}, {token!r}
HERE = pathlib.Path(__file__).resolve().parent


def attempt(fn):
    try:
        return ["reached", repr(fn())[:300]]
    except BaseException as exc:
        return ["refused", type(exc).__name__]


def connect(address):
    with socket.create_connection(address, timeout=3) as s:
        s.sendall(b"hello from the sandbox")


def docker_socket():
    s = socket.socket(socket.AF_UNIX)
    s.connect("/var/run/docker.sock")
    s.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
    return s.recv(100)


def write(path):
    with open(path, "w") as f:
        f.write(TOKEN)


def generate(seed):
    report = {{
        "canary": attempt(lambda: open(CANARY).read()),
        "canary_relative": attempt(lambda: (HERE / os.path.relpath(CANARY, HERE)).read_text()),
        "shadow": attempt(lambda: open("/etc/shadow").read()),
        "host_env": attempt(lambda: os.environ["TF_HOST_SECRET"]),
        "docker_socket": attempt(docker_socket),
        "write_guard": attempt(lambda: write(os.path.join(GUARD, "pwned"))),
        "write_own_folder": attempt(lambda: write(HERE / "pwned")),
        "write_tmp": attempt(lambda: write("/tmp/taskfactory-pwned-" + TOKEN)),
    }}
    for host in HOSTS:
        report["network " + host] = attempt(lambda: connect((host, PORT)))
    return {{"stock/report.tsv": json.dumps(report).encode()}}


def kill_everything(seed):
    for pid in (-1, 1, os.getpid()):  # all it may signal, the container's init, itself
        try:
            os.kill(pid, 9)
        except OSError:
            pass


class Exploit:
    def __reduce__(self):
        return (os.system, ("touch " + GUARD + "/unpickled",))


def smuggle(seed):
    blob = pickle.dumps(("ok", Exploit()))
    for fd in range(3, 12):
        try:
            os.write(fd, struct.pack(">Q", len(blob)) + blob)
        except OSError:
            pass
    return {{}}


def endless(seed):
    for fd in range(3, 12):
        try:
            os.write(fd, struct.pack(">Q", 1 << 62))
        except OSError:
            pass
    return {{}}
'''


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


class Listener:
    """A TCP server on every address of the host, counting the connections it gets."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("0.0.0.0", 0))
        self.sock.settimeout(0.2)
        self.port, self.connections = self.sock.getsockname()[1], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def accepted(self, timeout_s: float = 10.0) -> int:
        """The connections accepted so far, waiting up to ``timeout_s`` for a first one: a
        client's connect returns once the kernel queues it, before this thread accepts."""
        deadline = time.monotonic() + timeout_s
        while not self.connections and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.connections

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


def host_addresses() -> list[str]:
    """Where a container could find this host: the engine's bridge gateway, the host's
    own addresses, and loopback (the container's own, under network none)."""
    found = {"127.0.0.1", "172.17.0.1"}
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout
    return sorted(found | set(out.split()))


@pytest.fixture
def attack(tmp_path, monkeypatch):
    """A hostile ecosystem folder, a guard folder with a canary, a listener."""
    token = secrets.token_hex(16)
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "canary.txt").write_text(f"host secret {token}\n")
    folder = tmp_path / "hostile"
    shutil.copytree(INVENTORY, folder)
    listener = Listener()
    (folder / "seed.py").write_text(HOSTILE.format(
        canary=str(guard / "canary.txt"), guard=str(guard), port=listener.port,
        hosts=host_addresses(), token=token))
    monkeypatch.setenv("TF_HOST_SECRET", token)
    monkeypatch.delenv(TRUST, raising=False)
    before = {"guard": digest(guard), "folder": digest(folder)}
    yield folder, guard, token, listener, before
    listener.close()


def run_seed(folder: Path) -> dict:
    return json.loads(load_ecosystem(str(folder)).seed_state(1)["stock/report.tsv"])


def seed_functions(folder: Path) -> dict:
    """The seed module's functions, each called in the folder's sandboxed workers."""
    from environments.ecosystems.code import load_functions

    functions, _ = load_functions(folder.resolve(), {"seed": "seed.py"}, "sandbox")
    return functions["seed"]


def mine(owner: int, name: str) -> list[dict]:
    """The sandbox containers of folder ``name`` that process ``owner`` started."""
    client = docker.from_env()
    try:
        found = client.api.containers(all=True, filters={"label": USERCODE_LABEL})
    finally:
        client.close()
    return [c for c in found if c["Labels"].get(USERCODE_LABEL) == name
            and c["Labels"].get("taskfactory.owner_pid") == str(owner)]


def none_left(owner: int, name: str, within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while mine(owner, name) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not mine(owner, name)


def test_a_sandboxed_seed_reaches_nothing_of_the_host(attack):
    folder, guard, token, listener, before = attack
    report = run_seed(folder)
    own_tmp = report.pop("write_tmp")  # the sandbox's own /tmp, in memory, not the host's
    assert {what: verdict for what, (verdict, _) in report.items()} == {
        what: "refused" for what in report}, report
    assert own_tmp[0] == "reached" and token not in json.dumps(report)
    assert listener.connections == 0
    assert digest(guard) == before["guard"] and digest(folder) == before["folder"]
    assert not Path(f"/tmp/taskfactory-pwned-{token}").exists()


def test_a_trusted_seed_runs_as_the_user_on_this_host(attack, monkeypatch):
    """What ``--trust-ecosystem`` means: the same seed reads the host's files and the
    user's environment, writes where the user may, and reaches the host's network."""
    folder, guard, token, listener, _ = attack
    monkeypatch.setenv(TRUST, "1")
    report = run_seed(folder)
    for what in ("canary", "canary_relative", "host_env", "write_guard", "write_tmp",
                 "network 127.0.0.1"):
        assert report[what][0] == "reached", (what, report[what])
    assert token in report["canary"][1] and (guard / "pwned").read_text() == token
    assert listener.accepted() >= 1
    Path(f"/tmp/taskfactory-pwned-{token}").unlink()


def test_a_seed_that_kills_its_sandbox_fails_its_call_and_the_next_call_gets_a_new_one(
        attack):
    folder, *_ = attack
    seed = seed_functions(folder)
    with pytest.raises(UserCodeError, match="worker process died"):
        seed["kill_everything"](1)
    assert json.loads(seed["generate"](2)["stock/report.tsv"])  # a fresh worker answers


@pytest.mark.parametrize("name,error", [
    ("smuggle", "its worker sent what is not an answer"),
    ("endless", "its worker sent what is not an answer: an answer of"),
])
def test_what_a_sandboxed_worker_sends_is_never_unpickled_or_read_without_bound(
        attack, name, error):
    folder, guard, *_ = attack
    with pytest.raises(UserCodeError, match=error):
        seed_functions(folder)[name](1)
    assert not (guard / "unpickled").exists()


def test_a_user_folder_using_faker_seeds_the_same_bytes_in_the_sandbox(tmp_path,
                                                                       monkeypatch):
    """The built-in ``files`` (Faker, csv, json) copied as a user's folder: its sandboxed
    seed gives exactly the built-in's state, samplers included."""
    import random

    monkeypatch.delenv(TRUST, raising=False)
    shutil.copytree(BUILTIN_DIR / "files", tmp_path / "files")
    mine, builtin = load_ecosystem(str(tmp_path / "files")), load_ecosystem("files")
    for seed in (1, 2, 3):
        assert mine.seed_state(seed) == builtin.seed_state(seed)
    state = builtin.seed_state(1)
    path = next(p for p in sorted(state) if p.endswith(".csv"))
    for facet in sorted(builtin.samplers)[:4]:
        try:
            want = builtin.sample(facet, state[path], random.Random(5))
        except (LookupError, ValueError, TypeError):
            continue
        assert mine.sample(facet, state[path], random.Random(5)) == want


HANG = "\n\ndef hang(seed):\n    while True:\n        pass\n"


def test_a_hanging_seed_in_the_sandbox_times_out_and_its_container_goes(tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("TASKFACTORY_SEED_TIMEOUT_S", "2")
    shutil.copytree(INVENTORY, tmp_path / "hangs")
    (tmp_path / "hangs" / "seed.py").write_text((INVENTORY / "seed.py").read_text() + HANG)
    seed = seed_functions(tmp_path / "hangs")
    with pytest.raises(UserCodeError) as caught:
        seed["hang"](1)
    assert caught.value.timed_out
    assert none_left(os.getpid(), "hangs")  # its one worker was killed and removed


def test_sandboxes_end_with_the_process_that_started_them(tmp_path):
    """SIGKILL of the host process: its sandboxes see their stdin close and go, even with
    a call in flight."""
    shutil.copytree(INVENTORY, tmp_path / "orphans")
    (tmp_path / "orphans" / "seed.py").write_text((INVENTORY / "seed.py").read_text() + HANG)
    script = textwrap.dedent(f"""
        import threading
        from pathlib import Path
        from environments.ecosystems.code import load_functions
        functions, _ = load_functions(Path({str((tmp_path / 'orphans').resolve())!r}),
                                      {{"seed": "seed.py"}}, "sandbox")
        threading.Thread(target=functions["seed"]["hang"], args=(1,), daemon=True).start()
        threading.Event().wait(1)
        functions["seed"]["generate"](1)  # the hanging worker is busy: a second one answers
        print("ready", flush=True)
        threading.Event().wait()
    """)
    env = {k: v for k, v in os.environ.items() if k != TRUST}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=Path(__file__).parents[2])
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 30
    while len(mine(proc.pid, "orphans")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(mine(proc.pid, "orphans")) == 2  # one in the hanging call, an idle one
    proc.kill()
    proc.wait()
    assert none_left(proc.pid, "orphans")


def test_the_sandbox_runs_the_backends_base_image():
    from environments.docker.config import DEFAULT_IMAGE
    from environments.ecosystems.sandbox import IMAGE

    assert IMAGE == DEFAULT_IMAGE


def test_without_an_engine_a_user_folder_needs_trust(tmp_path, monkeypatch):
    monkeypatch.delenv(TRUST, raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    import environments.ecosystems.sandbox as sandbox

    sandbox._client.cache_clear()
    try:
        with pytest.raises(EcosystemError, match="pass --trust-ecosystem"):
            load_ecosystem(str(INVENTORY))
    finally:
        sandbox._client.cache_clear()
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "plan", "--ecosystem",
                           str(INVENTORY), "--n", "5"], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "--trust-ecosystem" in lines[0] and "make engine" in lines[0]
    trusted = subprocess.run([sys.executable, "-m", "flows.cli", "plan", "--ecosystem",
                              str(INVENTORY), "--n", "5", "--trust-ecosystem"],
                             capture_output=True, text=True, cwd=Path(__file__).parents[2],
                             timeout=120)
    assert trusted.returncode == 0, trusted.stderr
