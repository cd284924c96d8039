"""Harbor itself, for tests that check taskfactory's output with Harbor's own code: its
pydantic models (ATIF, trial and job files) and its viewer, ``harbor view``.

Harbor needs Python 3.12 and taskfactory runs on 3.11, so Harbor is no dependency of the
project: a venv of its own is made with ``python3.12 -m venv`` and
``pip install harbor==HARBOR_VERSION`` (PyPI), once, under ``TASKFACTORY_CACHE_DIR``
(default ``/var/cache/taskfactory``, else ``~/.cache/taskfactory``); a marker written last
says the install finished, and a file lock keeps two test processes from installing at
once.  ``python3.12`` is looked for on PATH, then among pyenv's versions.  Code that runs
in that venv is :mod:`tests.support.harbor_side`, started as a script.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

HARBOR_VERSION = "0.26.0"
SIDE = Path(__file__).with_name("harbor_side.py")
_DONE = ".installed"


class HarborUnavailable(RuntimeError):
    """No Harbor venv can be made here; the message says why."""


def python312() -> str | None:
    """A Python 3.12 interpreter: ``python3.12`` on PATH, else the newest pyenv 3.12."""
    found = shutil.which("python3.12")
    if found and subprocess.run([found, "-c", "import venv"], capture_output=True).returncode == 0:
        return found
    roots = [os.environ.get("PYENV_ROOT"), str(Path.home() / ".pyenv")]
    for root in filter(None, roots):
        candidates = sorted(Path(root, "versions").glob("3.12*/bin/python3.12"), reverse=True)
        if candidates:
            return str(candidates[0])
    return None


def _cache() -> Path:
    for folder in (os.environ.get("TASKFACTORY_CACHE_DIR"), "/var/cache/taskfactory",
                   str(Path.home() / ".cache" / "taskfactory")):
        if folder and (os.access(folder, os.W_OK) or not os.path.exists(folder)
                       and os.access(Path(folder).parent, os.W_OK)):
            return Path(folder)
    raise HarborUnavailable("no writable cache folder (set TASKFACTORY_CACHE_DIR)")


def harbor_venv() -> Path:
    """The venv (made and cached on first use); HarborUnavailable saying why not."""
    python = python312()
    if python is None:
        raise HarborUnavailable("no Python 3.12 (neither python3.12 on PATH nor a pyenv "
                                "3.12): Harbor needs one")
    cache = _cache()
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f"harbor-{HARBOR_VERSION}"
    with open(cache / f".harbor-{HARBOR_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / _DONE).is_file():
            shutil.rmtree(venv, ignore_errors=True)
            for argv in ([python, "-m", "venv", str(venv)],
                         [str(venv / "bin" / "pip"), "install", "--quiet",
                          f"harbor=={HARBOR_VERSION}"]):
                done = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
                if done.returncode != 0:
                    raise HarborUnavailable(f"{' '.join(argv[:4])} failed: "
                                            f"{done.stderr.strip()[-500:]}")
            (venv / _DONE).write_text(HARBOR_VERSION + "\n")
    return venv


def side(venv: Path, *args: str, stdin: str | None = None) -> dict:
    """Run :mod:`tests.support.harbor_side` in Harbor's venv; its JSON answer."""
    done = subprocess.run([str(venv / "bin" / "python"), str(SIDE), *args], input=stdin,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.status, reply.read()


@contextlib.contextmanager
def harbor_view(venv: Path, folder: Path) -> Iterator[str]:
    """``harbor view FOLDER`` on a free loopback port, as a subprocess; yields its base URL
    once ``/api/health`` answers, and stops it (its process group) afterwards."""
    port = _free_port()
    proc = subprocess.Popen([str(venv / "bin" / "harbor"), "view", str(folder), "--host",
                             "127.0.0.1", "--port", str(port), "--no-build"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                if get(f"{url}/api/health")[0] == 200:
                    break
            assert time.monotonic() < deadline, "harbor view did not answer in 120 s"
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
