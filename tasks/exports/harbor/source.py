"""Where exported tasks come from: the dataset's ``tasks`` table, each row with its
ecosystem (a folder the user names, else the dataset's snapshot of the folder the task
was made with, else the built-in) and its parsed trace and checks.

The dataset is read through its public read API (``connect``, ``check_read_only``), and
only from :func:`load_rows`.  Bad input — no dataset, a ``where`` that DuckDB refuses, an
ecosystem that cannot be found, a folder not exported by taskfactory — raises
:class:`tasks.exports.harbor.HarborError` naming the fix.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from environments.ecosystems import Ecosystem
from schemas.graph import WorkflowGraph
from schemas.records import TaskRow
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.dataset.store.paths import check_name, open_file
from tasks.exports.harbor import HarborError
from tasks.gate.controls import ControlTask
from tasks.reconstruct.program import program_trace


@dataclass(frozen=True)
class ExportTask:
    """A task row with its ecosystem and parsed trace and checks."""

    row: TaskRow
    eco: Ecosystem
    trace: Trace
    checks: list[Check]

    @classmethod
    def of(cls, row: TaskRow, eco: Ecosystem) -> ExportTask:
        checks = [Check.model_validate(c) for c in json.loads(row.checks_json)]
        return cls(row, eco, Trace.model_validate_json(row.trace_json), checks)

    @property
    def reconstruct(self) -> bool:
        return self.row.kind == "reconstruct"

    @property
    def case_refs(self) -> list[dict]:
        """A reconstruct task's cases as its row records them (name, seed, public, args),
        public first; empty on other kinds."""
        return json.loads(self.row.cases_json or "[]")

    @property
    def graph(self) -> WorkflowGraph:
        return WorkflowGraph.model_validate_json(self.row.graph_json)

    @property
    def controlled(self) -> ControlTask:
        """What the gate's controls read of the task (on a reconstruct task, as the gate
        reads it: the trace of the reference program, and the first public example)."""
        if self.reconstruct:
            public = next(c["name"] for c in self.case_refs if c["public"])
            return ControlTask(self.eco, program_trace(self.eco, self.graph, self.trace),
                               self.checks, self.row.instruction, public_case=public)
        return ControlTask(self.eco, self.trace, self.checks, self.row.instruction)

    @property
    def folder_name(self) -> str:
        """``<ecosystem>-<task id>``; HarborError unless both are plain names (a crafted
        row must not name a folder outside ``--out``)."""
        for what, value in (("ecosystem", self.row.ecosystem), ("task id", self.row.task_id)):
            try:
                check_name(value, what)
            except ValueError as exc:
                raise HarborError(f"{exc}; the dataset's tasks table is damaged or was "
                                  "crafted: this task cannot be exported") from None
        return f"{self.row.ecosystem}-{self.row.task_id}"

    @property
    def harbor_name(self) -> str:
        """``taskfactory/<folder name>``, a stack's ``+`` written ``.`` (Harbor's task names
        are letters, digits, ``.``, ``_`` and ``-``; an ecosystem's name has no ``.``)."""
        return f"taskfactory/{self.folder_name.replace('+', '.')}"


def load_rows(data: Path, where: str | None = None) -> list[TaskRow]:
    """The accepted tasks in ``data`` matching ``where``, one per task id; DatasetError
    when there is no dataset at ``data`` or it was written by an older taskfactory."""
    from tasks.dataset import Dataset, QueryError

    try:
        return Dataset.open(data).task_rows(where)
    except QueryError as exc:
        raise HarborError(f"--where: {exc}") from None


def load_ecosystems(rows: Iterable[TaskRow], folders: list[Path], data: Path
                    ) -> dict[tuple[str, str], Ecosystem]:
    """Ecosystem by (name, ecosystem version) of each row: a ``--ecosystem-dir`` folder of
    that name first (an edited one is refused later, by its version), else the dataset's
    snapshot of the folder the row was made with, else the built-in."""
    from environments.ecosystems import EcosystemError, builtin_named, load_ecosystem

    given: dict[str, Ecosystem] = {}
    for folder in folders:
        try:
            eco = load_ecosystem(str(folder))
        except EcosystemError as exc:
            raise HarborError(f"--ecosystem-dir: {exc}") from None
        given.setdefault(eco.name, eco)
    found: dict[tuple[str, str], Ecosystem] = {}
    for key in sorted({(r.ecosystem, r.ecosystem_version) for r in rows}):
        name = key[0]
        known = given.get(name) or _snapshot(data, *key) or builtin_named(name)
        if known is None:
            raise HarborError(f"tasks use ecosystem {name!r} version {key[1]}, which is not "
                              f"built in and has no snapshot in {data}; pass its "
                              f"{'stack file' if '+' in name else 'folder'} with "
                              "--ecosystem-dir")
        found[key] = known
    return found


def _snapshot(data: Path, name: str, version: str) -> Ecosystem | None:
    """The dataset's snapshot of ecosystem ``name`` at ``version`` (loaded like any user
    folder), or None; HarborError when it is crafted or no longer what its name says."""
    from environments.ecosystems import EcosystemError, load_ecosystem
    from tasks.dataset.store.errors import OutsideError
    from tasks.dataset.store.snapshots import digest_of, snapshot_folder

    try:
        folder = snapshot_folder(data, name, version)
        eco = load_ecosystem(str(folder)) if folder is not None else None
    except (OutsideError, EcosystemError) as exc:
        raise HarborError(f"the dataset's snapshot of ecosystem {name!r}: {exc}") from None
    if eco is not None and (eco.name, eco.digest) != (name, digest_of(version)):
        raise HarborError(f"the dataset's snapshot {folder} is ecosystem {eco.name!r} digest "
                          f"{eco.digest}, not what its name says: it was changed or crafted; "
                          "pass the ecosystem folder with --ecosystem-dir")
    return eco


def selected_tasks(data: Path, where: str | None, folders: list[Path]) -> list[ExportTask]:
    """The accepted tasks in ``data`` matching ``where``, with their ecosystems (at least
    one, else HarborError)."""
    rows = load_rows(data, where)
    if not rows:
        raise HarborError(f"no accepted task in {data} matches"
                          + (f" --where {where}" if where else "")
                          + "; look with `taskfactory query \"select ... from tasks\"`")
    ecos = load_ecosystems(rows, folders, data)
    return [ExportTask.of(row, ecos[row.ecosystem, row.ecosystem_version]) for row in rows]


def task_folders(root: Path) -> list[Path]:
    """``root`` when it is an exported task folder, else the task folders in it."""
    if (root / "task.toml").is_file():
        return [root]
    if not root.is_dir():
        raise HarborError(f"no exported task folder at {root}; export some with "
                          "`taskfactory export harbor --out DIR`")
    found = sorted(p for p in root.iterdir() if (p / "task.toml").is_file()
                   and not p.name.startswith("."))
    if not found:
        raise HarborError(f"{root} holds no task folder (none has a task.toml)")
    return found


def exported_task_id(folder: Path) -> str | None:
    """The task id an exported folder's ``task.toml`` names in ``[metadata.taskfactory]``;
    None when ``folder`` is not a real folder, or its ``task.toml`` is not a regular file
    (never followed) naming one."""
    try:
        with open_file(folder, "task.toml") as f:
            meta = tomllib.loads(f.read(1 << 20).decode())["metadata"]["taskfactory"]
        return str(meta["task_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def folder_task_id(folder: Path) -> str:
    """The task id an exported folder's ``task.toml`` names."""
    task_id = exported_task_id(folder)
    if task_id is None:
        raise HarborError(f"{folder}/task.toml has no [metadata.taskfactory] task_id; it was "
                          "not exported by taskfactory")
    return task_id


def folder_tasks(folders: list[Path], data: Path,
                 ecosystem_dirs: list[Path]) -> list[tuple[ExportTask, Path]]:
    """Each exported folder with its task, read from the dataset it was exported from."""
    ids = {folder: folder_task_id(folder) for folder in folders}
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in sorted(set(ids.values())))
    rows = {r.task_id: r for r in load_rows(data, f"task_id in ({quoted})")}
    missing = sorted(set(ids.values()) - set(rows))
    if missing:
        raise HarborError(f"{len(missing)} task(s) are not in {data} (e.g. {missing[0]}); "
                          "pass the dataset they were exported from with --data")
    ecos = load_ecosystems(rows.values(), ecosystem_dirs, data)
    return [(ExportTask.of(row, ecos[row.ecosystem, row.ecosystem_version]), f)
            for f, row in ((f, rows[ids[f]]) for f in folders)]
