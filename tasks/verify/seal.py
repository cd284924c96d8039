"""How a verifier keeps its reward from the agent it judges: it stops what the agent left
running, takes the logs folder, runs the agent's programs with the agent's rights only,
and writes the reward last.

Standard library only, and no ``from __future__`` import: every rendered verifier embeds
this file's source (like :mod:`tasks.verify.comparisons`).  A verifier run as root with
``--agent-user UID:GID`` (Harbor's ``tests/test.sh``, the factory's gate and ``solve``)
goes through :func:`judged`, which does, in order:

1. :func:`stop_agent`: SIGKILL every process of the agent's user (any of its real,
   effective, saved or filesystem uids), whatever its session, until none is left; never
   this process, its ancestors, pid 1 or the pids in ``TF_SANDBOX_PIDS`` (the factory
   sandbox's command runner, which is the sandbox's, not the agent's).  One that will not
   die raises :class:`SealError`, and every check fails.
2. :func:`take_logs`: the logs folder emptied — a planted reward file, symlink, FIFO or
   folder is removed, never followed — then owned by root, mode 0755.
3. the checks, on a state nothing of the agent's can change any more.  An agent's
   program (a reconstruct task's ``run.sh``) runs through :func:`run_as_agent`: as the
   agent's user, in a folder it owns, in a session of its own, with a time limit and a
   file-size limit, then :func:`stop_agent` again.
4. :func:`write_reward`: ``details.json``, ``reward.txt`` and, last, ``reward.json``,
   each written to a new file (never through one that is there) and renamed into place.
   No reward file exists before the checks finish.

Without ``--agent-user`` (a backend with one user, or a person running the verifier by
hand) step 1 and the user switch of step 3 are skipped.
"""

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

SANDBOX_PIDS = "TF_SANDBOX_PIDS"
STOP_WITHIN_S = 10.0
STDERR_KEPT = 4096
PROGRAM_FILE_MB = 64
PROGRAM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class SealError(Exception):
    """The verifier could not make the state its own: every check fails with this."""


def agent_ids(spec):
    """``"1000:1000"`` -> (1000, 1000)."""
    uid, _, gid = str(spec).partition(":")
    return int(uid), int(gid or uid)


def _uids_and_state(pid):
    """(uids, state letter) of a process; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    uids = {int(u) for u in fields.get("Uid", "").split() if u.isdigit()}
    return uids, (fields.get("State", "?").split() or ["?"])[0]


def _spared():
    """This process, its ancestors, pid 1 and the sandbox's own pids."""
    pids, pid = {1}, os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    named = os.environ.get(SANDBOX_PIDS, "")
    return pids | {int(p) for p in named.split(",") if p.strip().isdigit()}


def agent_processes(uid, spared=()):
    """The live (not zombie) processes with ``uid`` among their uids, but ``spared``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spared:
            continue
        seen = _uids_and_state(int(name))
        if seen is not None and uid in seen[0] and seen[1] != "Z":
            found.append(int(name))
    return found


def stop_agent(uid, within=STOP_WITHIN_S):
    """SIGKILL every process of ``uid`` but the spared ones, round after round (one being
    killed may have forked), until a round finds none; SealError past ``within`` s."""
    spared, deadline = _spared(), time.monotonic() + within
    while True:
        found = agent_processes(uid, spared)
        if not found:
            return
        if time.monotonic() > deadline:
            raise SealError(f"processes of uid {uid} would not stop: {found[:10]}")
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _folder(path):
    """An fd of the folder ``path``, never through a symlink; SealError otherwise."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SealError(f"{path} is not a folder the verifier can take: {exc}") from None


def take_logs(path):
    """Empty the logs folder ``path`` (made if missing) without following anything in it,
    then make it root's (when root), mode 0755.  A regular file root made there (the
    runner's own log of this verifier's output) is kept: no other user can make one.  An
    entry that disappears while the folder is emptied is skipped, not an error (a process
    the seal failed to stop may still be renaming files there)."""
    os.makedirs(path, mode=0o755, exist_ok=True)
    fd = _folder(path)
    try:
        for name in os.listdir(fd):
            with contextlib.suppress(FileNotFoundError):  # gone since the listing: fine
                st = os.lstat(name, dir_fd=fd)
                if stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_nlink == 1 \
                        and os.geteuid() == 0:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)


def write_reward(path, summary, details):
    """``details.json``, ``reward.txt`` and ``reward.json`` (last) in the logs folder, each
    a new file renamed into place."""
    fd = _folder(path)
    try:
        for name, text in (("details.json", json.dumps(details, indent=2)),
                           ("reward.txt", f"{summary['reward']}\n"),
                           ("reward.json", json.dumps(summary))):
            tmp = f".{name}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=fd)
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                          dir_fd=fd)
            with os.fdopen(out, "w", encoding="utf-8") as f:
                f.write(text)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def agent_folder(ids, prefix):
    """A new empty folder (mode 0700) the agent's user owns (the caller's without
    ``ids``)."""
    where = tempfile.mkdtemp(prefix=prefix)
    if ids is not None:
        os.chown(where, *ids)
    return where


def _limits():
    resource.setrlimit(resource.RLIMIT_FSIZE, (PROGRAM_FILE_MB * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_as_agent(argv, cwd, ids, timeout, home):
    """Run ``argv`` in ``cwd`` as the agent's user ``ids`` (uid, gid; None: as this
    process's user) with ``HOME=home``, a fixed environment, no stdin, a session of its
    own, ``timeout`` s and files of at most ``PROGRAM_FILE_MB``; then stop every process
    it left.  Returns (exit code, or None when it ran out of time; the tail of its
    stderr)."""
    user = {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}
    env = {"PATH": PROGRAM_PATH, "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_limits, **user)
    tail, timed_out = _stderr_tail(proc, time.monotonic() + timeout)
    if timed_out:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    if ids is not None:
        stop_agent(ids[0])
    return (None if timed_out else code), tail.decode("utf-8", errors="replace")


def _stderr_tail(proc, deadline):
    """(the last ``STDERR_KEPT`` bytes of ``proc``'s stderr, whether it ran out of time):
    read until it exited and its stderr closed (a process it left holding stderr open is
    given 0.2 s), or until ``deadline``."""
    tail, fd, reading, exited_at = b"", proc.stderr.fileno(), True, None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and (not reading or now > exited_at + 0.2):
                return tail, False
            if now >= deadline:
                return tail, exited_at is None
            wait = min(deadline - now, 0.05)
            if not reading:
                time.sleep(wait)
                continue
            if select.select([fd], [], [], wait)[0]:
                chunk = os.read(fd, 65536)
                reading = bool(chunk)
                tail = (tail + chunk)[-STDERR_KEPT:]
    finally:
        proc.stderr.close()


def exposures(uid, logs):
    """What would let anything but the verifier change its reward once it has run: a
    process of ``uid`` still alive (spared ones aside), the logs folder or an entry in it
    not root's regular file (folder), or writable by others.  Empty when the reward is the
    verifier's own."""
    found = []
    alive = agent_processes(uid, _spared())
    if alive:
        found.append(f"processes of uid {uid} alive: {alive[:5]}")
    try:
        st = os.lstat(logs)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            found.append(f"{logs}: uid {st.st_uid}, mode {stat.filemode(st.st_mode)}")
        for name in os.listdir(logs):
            st = os.lstat(os.path.join(logs, name))
            if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
                found.append(f"{name}: uid {st.st_uid}, mode {stat.filemode(st.st_mode)}")
    except OSError as exc:
        found.append(f"{logs}: {exc}")
    return found


def reward_of(logs):
    """The reward in ``logs/reward.json`` (a regular file, never through a symlink) as
    Harbor reads it; None when there is none or it is not a flat number."""
    try:
        fd = os.open(os.path.join(logs, "reward.json"), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            reward = json.loads(f.read(4096)).get("reward")
    except (OSError, ValueError, AttributeError):
        return None
    return float(reward) if isinstance(reward, int | float) else None


def judged(args, judge):
    """The verifier's run: the seal's steps around ``judge(ids)`` -> (summary, details),
    where ``ids`` are the agent's (uid, gid) or None; the reward written to ``args.logs``
    (when given) and the summary printed as the last line of stdout.  The exit code: 0
    when the reward is 1, else 1."""
    ids = agent_ids(args.agent_user) if args.agent_user else None
    try:
        if ids is not None:
            stop_agent(ids[0])
        if args.logs:
            take_logs(args.logs)
        summary, details = judge(ids)
    except SealError as exc:
        summary = {"reward": 0, "checks_passed": 0, "checks_total": 0}
        details = [{"kind": "seal", "section": "", "key": "verifier", "passed": False,
                    "error": str(exc)}]
    for d in details:
        where = f"{d['section']}/{d['key']}" if d["section"] else d["key"]
        where = f"{d['case']}:{where}" if d.get("case") else where
        mark = "PASS" if d["passed"] else "FAIL"
        print(f"{mark} {d['kind']} {where}" + (f" ({d['error']})" if d["error"] else ""),
              file=sys.stderr)
    if args.logs:
        write_reward(args.logs, summary, details)
    print(json.dumps(summary))
    return 0 if summary["reward"] == 1 else 1
