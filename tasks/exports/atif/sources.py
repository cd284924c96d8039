"""Where ``taskfactory import atif`` finds ATIF documents, and what it reads beside them.

A source is a JSONL file (one document a line, as ``export atif --layout jsonl`` writes),
a single document, or a folder searched for Harbor's trial layout:
``<trial>/agent/trajectory.json``, links never followed.  Beside a document in a trial
folder, the trial says what the document does not (each read as Harbor writes it; a file
that is missing or does not parse is passed over):

- the task: ``config.json``'s ``task.path`` or ``task.name``, ``result.json``'s
  ``task_name`` (an exported task folder is named ``<ecosystem>-<task_id>``);
- the reward: ``result.json``'s ``verifier_result.rewards.reward``, else
  ``verifier/reward.json``'s ``reward``, else ``verifier/reward.txt``;
- the verifier's details: ``checks_passed``/``checks_total`` in ``verifier/reward.json``
  and the ``PASS``/``FAIL`` lines of ``verifier/test-stdout.txt`` (what an exported task's
  verifier writes there).

A document's own root ``extra`` (as ``export atif`` writes it: ``task_id``, ``reward``,
``checks_passed``, ``checks_total``, ``verifier_lines``) comes after the trial's files.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tasks.exports.atif import AtifError
from tasks.exports.atif.models import Trajectory
from tasks.verify.verifier import check_lines

MAX_BYTES = 64 << 20
"""A document (or JSONL file) larger than this is refused rather than read."""


@dataclass(frozen=True)
class Found:
    """One valid document, where it was (``path`` or ``path:line``) and its trial folder."""

    where: str
    doc: Trajectory
    trial: Path | None

    @property
    def extra(self) -> dict[str, Any]:
        return self.doc.extra or {}

    def names(self) -> list[str]:
        """What the document and its trial call its task, most specific first."""
        config = _json_file(self.trial, "config.json") or {}
        result = _json_file(self.trial, "result.json") or {}
        task = config.get("task")
        task = task if isinstance(task, dict) else {}
        found = [self.extra.get("task_id"), task.get("path"), task.get("name"),
                 result.get("task_name")]
        return [str(name).rstrip("/").rpartition("/")[2] for name in found
                if isinstance(name, str) and name.strip("/")]

    def reward(self) -> float | None:
        verifier = (_json_file(self.trial, "result.json") or {}).get("verifier_result")
        rewards = verifier.get("rewards") if isinstance(verifier, dict) else None
        summary = _json_file(self.trial, "verifier/reward.json") or {}
        for value in (rewards.get("reward") if isinstance(rewards, dict) else None,
                      summary.get("reward"), _text_file(self.trial, "verifier/reward.txt"),
                      self.extra.get("reward")):
            number = _number(value)
            if number is not None:
                return number
        return None

    def checks(self) -> tuple[int, int]:
        """(passed, total) of the verifier's checks; (0, 0) when nothing says."""
        for source in (_json_file(self.trial, "verifier/reward.json") or {}, self.extra):
            passed, total = source.get("checks_passed"), source.get("checks_total")
            if isinstance(passed, int) and isinstance(total, int):
                return passed, total
        return 0, 0

    def verifier_lines(self) -> list[str] | None:
        text = _text_file(self.trial, "verifier/test-stdout.txt")
        if text is not None and check_lines(text):
            return list(check_lines(text))
        lines = self.extra.get("verifier_lines")
        return [str(x) for x in lines] if isinstance(lines, list) else None


def _number(value: object) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _read(path: Path) -> bytes | None:
    """A regular file's bytes (never through a link), None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise AtifError(f"{path} is larger than {MAX_BYTES >> 20} MiB; split it")
    return data


def _text_file(trial: Path | None, rel: str) -> str | None:
    data = _read(trial / rel) if trial is not None else None
    return data.decode("utf-8", "replace") if data is not None else None


def _json_file(trial: Path | None, rel: str) -> dict[str, Any] | None:
    text = _text_file(trial, rel)
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _parse(text: str, where: str, trial: Path | None) -> Found:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AtifError(f"{where}: not JSON ({exc}); fix or remove the document") from None
    try:
        return Found(where, Trajectory.model_validate(data), trial)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "the document"
        raise AtifError(f"{where}: not an ATIF document ({loc}: {err['msg']}); fix or remove "
                        "it") from None


def _trial_documents(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):  # links to folders are never entered
        dirs.sort()
        if Path(folder).name == "agent" and "trajectory.json" in files:
            yield Path(folder) / "trajectory.json"


def documents(src: Path) -> list[Found]:
    """Every document of ``src``, validated; AtifError naming the first that is not JSON or
    not ATIF, or when ``src`` holds none."""
    if src.is_dir() and not src.is_symlink():
        found = []
        for path in _trial_documents(src):
            data = _read(path)
            if data is not None:
                found.append(_parse(data.decode("utf-8", "replace"), str(path),
                                    path.parent.parent))
        if not found:
            raise AtifError(f"{src} holds no ATIF document (Harbor keeps one per trial as "
                            "<trial>/agent/trajectory.json); give a folder of trials or a "
                            "JSONL file")
        return found
    data = _read(src)
    if data is None:
        raise AtifError(f"{src} is neither a folder nor a file; give a folder of Harbor "
                        "trials or a JSONL file of ATIF documents")
    text = data.decode("utf-8", "replace")
    if src.suffix != ".jsonl":
        trial = src.parent.parent if src.parent.name == "agent" else None
        return [_parse(text, str(src), trial)]
    found = [_parse(line, f"{src}:{n}", None)
             for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not found:
        raise AtifError(f"{src} holds no ATIF document (it is empty)")
    return found
