"""The ``environment/`` folder of a Harbor task: a Dockerfile that rebuilds, layer by
layer, the environment the factory validated.

Realization in the factory (``tasks/execute/realize.py``) is: the ecosystem's image (base tag +
Debian packages + support files, ``environments/docker/images.py``), the seed files written into
``/workspace`` as uid 1000 (files 0644, folders 0755), the ecosystem's ``setup`` run as
uid 1000 in ``/workspace``, the repairs' additions (folders, then files), and the
``service`` started and awaited.  The Dockerfile does the same, in the same order:

- the ecosystem image's own Dockerfile text (the same function renders it), with the
  trace's added packages;
- ``COPY --chown=1000:1000 workspace/ /workspace/`` — the seed files, regenerated from
  the ecosystem and the task's seed (with a fix task's fault planted), and checked
  against the task's ``env_digest``;
- ``RUN ["bash", "-c", <setup>]`` as uid 1000 — the argv the factory runs;
- the additions: ``mkdir -p`` of the added folders, ``COPY`` of the added files;
- for a service, an entrypoint that runs the factory's own start-and-wait command, then
  the container's command (Harbor's compose file runs ``sleep infinity``).

A reconstruct task's workspace is the agent's, as its gate lays it out: instead of the
seed, the setup and the additions, ``COPY`` of the public examples' arguments and
tarballs (each case's input and the reference program's output on it, made afresh by
:func:`tasks.exports.harbor.rebuild.rebuilt_cases`) and a ``RUN`` as uid 1000 that unpacks them into
``examples/<case>/{input,expected}/``.  No hidden case is in the build context.

Nothing of ``tests/`` or ``solution/`` is copied into the image.
"""

from __future__ import annotations

import json
import posixpath
import shlex

from environments.docker.config import DockerConfig
from environments.docker.images import dockerfile
from environments.ecosystems import Ecosystem
from schemas.records import TaskRow
from schemas.trace import EnvAdditions
from tasks.execute.realize import env_digest, service_start_command
from tasks.exports.harbor import HarborError
from tasks.plan.tiers import scale_of
from tasks.reconstruct.cases import Case
from tasks.reconstruct.examples import unpacking

ENTRYPOINT = "/usr/local/bin/taskfactory-entrypoint.sh"
FILE_MODE, EXEC_MODE = 0o644, 0o755

HARDEN = ("find / -xdev -perm /6000 -type f -exec chmod ug-s {} + "
          "&& install -d -m 0700 -o root -g root /tests")
"""Run as root in every exported image: no set-user-id or set-group-id program is left
for the agent's user to gain rights with, and ``/tests`` exists before the runner uploads
into it, owned by root, mode 0700."""

Files = dict[str, tuple[bytes, int]]
"""Relative path -> (content, mode)."""


def ecosystem_version(eco: Ecosystem) -> str:
    """The ``TaskRow.ecosystem_version`` an ecosystem folder gives its tasks."""
    return f"{eco.spec.version}+{eco.digest}"


def base_image(task: TaskRow) -> str:
    """The base tag the task's environment was built ``FROM``."""
    return task.image if task.backend == "docker" else DockerConfig().image


def _relative(path: str, what: str, task: TaskRow) -> str:
    clean = posixpath.normpath(path)
    if clean.startswith(("/", "../")) or clean in (".", ".."):
        raise HarborError(f"task {task.task_id}: {what} path {path!r} leaves the workspace")
    return clean


def seed_files(task: TaskRow, eco: Ecosystem, additions: EnvAdditions) -> dict[str, bytes]:
    """The task's seed files, regenerated; HarborError unless the ecosystem folder is the
    one the task was made with and the seed reproduces the task's ``env_digest``."""
    if ecosystem_version(eco) != task.ecosystem_version:
        raise HarborError(
            f"task {task.task_id} was made with ecosystem {task.ecosystem!r} version "
            f"{task.ecosystem_version}, but {eco.folder} is version {ecosystem_version(eco)}; "
            "pass the ecosystem folder the task was generated with (--ecosystem-dir), or "
            "none to use the dataset's snapshot of it")
    try:
        files = eco.seed_state(task.seed, task.fault, scale_of(task.tier))
    except KeyError as exc:
        raise HarborError(f"task {task.task_id}: {exc.args[0]}; pass the ecosystem folder the "
                          "task was generated with (--ecosystem-dir)") from None
    if env_digest(files, additions) != task.env_digest:
        raise HarborError(
            f"task {task.task_id}: seed {task.seed} of ecosystem {task.ecosystem!r} no longer "
            f"reproduces the task's environment (digest {env_digest(files, additions)} != "
            f"{task.env_digest}); the seed generator is not deterministic")
    return {_relative(p, "seed file", task): data for p, data in files.items()}


def _run(command: str) -> str:
    return "RUN " + json.dumps(["bash", "-c", command])


def entrypoint_script(eco: Ecosystem) -> str:
    """Starts the ecosystem's service as the factory does (and waits until it is ready),
    then runs the container's command."""
    assert eco.spec.service is not None
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# Starts the {eco.name} ecosystem's service exactly as taskfactory's realization does,",
        "# waits until it answers, then runs the container's command.",
        "set -u",
        f"cd {DockerConfig().workdir}",
        "bash -c " + shlex.quote(service_start_command(eco.spec.service))
        + ' || { echo "taskfactory-entrypoint: the service did not become ready" >&2; exit 1; }',
        'exec "$@"',
    ]) + "\n"


def environment_files(task: TaskRow, eco: Ecosystem, additions: EnvAdditions,
                      cases: list[Case] | None = None) -> Files:
    """Every file of ``environment/``: the Dockerfile and its build context.  With
    ``cases`` (a reconstruct task's), the workspace is the agent's: the public examples
    unpacked as the gate lays them out (:func:`tasks.reconstruct.examples.unpacking`), and nothing
    of
    the seed or of a hidden case."""
    config = DockerConfig()
    user = config.user
    spec = eco.spec
    packages = sorted({*spec.image.packages, *additions.packages})
    if cases is None:
        seeds = seed_files(task, eco, additions)
        out: Files = {f"workspace/{p}": (data, FILE_MODE) for p, data in sorted(seeds.items())}
    else:
        blobs, unpack = unpacking(cases)
        out = {f"workspace/{p}": (data, FILE_MODE) for p, data in sorted(blobs.items())}
    support = eco.support_files()
    out.update({f"support/{name}": (data, FILE_MODE) for name, data in support.items()})
    text = dockerfile(base_image(task), packages, bool(support)).rstrip("\n")
    lines = [
        f"# taskfactory task {task.task_id}: ecosystem {eco.name} {task.ecosystem_version}, "
        f"seed {task.seed}.",
        "# The ecosystem image, as the factory builds it:",
        text,
        "# No set-user-id program, and a tests folder only root can enter: what the runner",
        "# uploads there (the verifier) is never readable by the agent's user.",
        "USER root",
        _run(HARDEN),
        f"USER {user}",
    ]
    if cases is not None:
        lines += ["# The agent's workspace: the public examples, unpacked by the sandbox user:",
                  f"COPY --chown={user} workspace/ {config.workdir}/", _run(unpack)]
    else:
        lines += _seeded(task, eco, additions, out, bool(seeds))
    if spec.service:
        out["entrypoint.sh"] = (entrypoint_script(eco).encode(), EXEC_MODE)
        lines += ["# The service starts with the container and is ready before its command runs:",
                  f"COPY entrypoint.sh {ENTRYPOINT}",
                  f'ENTRYPOINT ["bash", "{ENTRYPOINT}"]',
                  'CMD ["sleep", "infinity"]']
    lines += ["# The container's own processes run as root (the agent's as the user task.toml",
              "# names), so the agent can stop none of them.",
              "USER root",
              f"LABEL taskfactory.image=harbor-task taskfactory.task={task.task_id}"]
    out["Dockerfile"] = ("\n".join(lines).encode() + b"\n", FILE_MODE)
    return out


def _seeded(task: TaskRow, eco: Ecosystem, additions: EnvAdditions, out: Files,
            seeded: bool) -> list[str]:
    """The Dockerfile lines of a build or fix task's workspace: the seed files, the
    setup, the repairs' additions (whose files go into ``out``)."""
    config = DockerConfig()
    user, workdir = config.user, config.workdir
    lines = ["# The seeded workspace, owned by the sandbox user, then the ecosystem's setup:"]
    if seeded:
        lines.append(f"COPY --chown={user} workspace/ {workdir}/")
    if eco.spec.setup:
        lines.append(_run(eco.spec.setup))
    if additions.dirs or additions.files:
        lines.append("# What the repairs of the reference trace added:")
    if additions.dirs:
        for d in additions.dirs:
            _relative(d, "added folder", task)
        lines.append(_run("mkdir -p -- " + " ".join(map(shlex.quote, additions.dirs))))
    if additions.files:
        for path, text_ in sorted(additions.files.items()):
            rel = _relative(path, "added file", task)
            out[f"additions/{rel}"] = (text_.encode(), FILE_MODE)
        lines.append(f"COPY --chown={user} additions/ {workdir}/")
    return lines
