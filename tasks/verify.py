"""Verification: checks from the probe delta, rendered as one standalone verifier script.

The rendered script (stdlib only) is the single implementation: the factory runs it in
the sandbox for the gate, and the Harbor export ships it as ``tests/verify.py``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jinja2
from pydantic import BaseModel

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox
from schemas.ecosystem import type_satisfies
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.execute import ANSWER_FILE
from tasks.failures import StageFailure

_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


class VerifierResult(BaseModel):
    reward: float
    checks_passed: int
    checks_total: int


def probe(sandbox: Sandbox, eco: Ecosystem) -> dict:
    """The ecosystem's state as canonical JSON, read inside the sandbox."""
    result = sandbox.exec(["python3", "-"], stdin=eco.probe_source.encode(), timeout=30)
    if result.exit_code != 0:
        raise StageFailure("verify", "environment", f"probe failed: {result.stderr.strip()[-200:]}")
    return json.loads(result.stdout)


def _producers(eco: Ecosystem, trace: Trace) -> dict[str, tuple[str, str]]:
    """Output path -> (semantic type, order) for every file a step wrote."""
    produced: dict[str, tuple[str, str]] = {}
    for st in trace.steps:
        returns = eco.spec.tool(st.tool).returns
        if returns.from_param and eco.spec.tool(st.tool).effect == "write":
            produced[st.args[returns.from_param]] = (returns.type, returns.order)
    return produced


def _check_for(path: str, text: str, out_type: str, order: str) -> Check:
    if type_satisfies(out_type, "file.text.json"):
        return Check(kind="json_equal", path=path, expected=json.loads(text))
    if type_satisfies(out_type, "file.text.csv"):
        rows = [r for r in csv.reader(io.StringIO(text)) if r]
        return Check(kind="csv_rows", path=path, expected={"header": rows[0], "rows": rows[1:]},
                     ordered=order != "unordered")
    if order == "unordered":
        return Check(kind="file_lines_unordered", path=path, expected=text.splitlines(),
                     ordered=False)
    return Check(kind="file_text", path=path, expected=text)


def derive_checks(eco: Ecosystem, trace: Trace, before: dict, after: dict) -> list[Check]:
    """One content check per changed file, plus the answer; every change must be asked for."""
    old, new = before["files"], after["files"]
    removed = sorted(set(old) - set(new))
    if removed:
        raise StageFailure("verify", "unexpected_change", f"files removed: {removed[:3]}")
    produced = _producers(eco, trace)
    checks: list[Check] = []
    for path in sorted(new):
        if path in old and old[path] == new[path]:
            continue
        if path not in produced:
            raise StageFailure("verify", "unexpected_change",
                               f"{path} changed but no step wrote it")
        text = new[path].get("text")
        if text is None:
            raise StageFailure("verify", "degenerate", f"{path} is not checkable text")
        checks.append(_check_for(path, text, *produced[path]))
    if trace.answer is not None:
        checks.append(Check(kind="answer", path=ANSWER_FILE, expected=trace.answer))
    if not checks:
        raise StageFailure("verify", "no_outcome",
                           "the workflow changes nothing and answers nothing")
    return checks


def render_verifier(checks: list[Check], task_ref: str = "") -> str:
    payload = json.dumps([c.model_dump() for c in checks], sort_keys=True)
    return _TEMPLATES.get_template("verifier.py.j2").render(
        checks_literal=repr(payload), task_ref=task_ref or "(generated)")


def run_verifier(sandbox: Sandbox, verifier_py: str) -> VerifierResult:
    """Run the rendered verifier in the sandbox's workdir and read its summary line."""
    result = sandbox.exec(["python3", "-", "--root", "."], stdin=verifier_py.encode(), timeout=60)
    lines = result.stdout.strip().splitlines()
    if not lines:
        raise StageFailure("validate", "environment",
                           f"verifier printed nothing (exit {result.exit_code}): "
                           f"{result.stderr.strip()[-200:]}")
    return VerifierResult.model_validate_json(lines[-1])
