"""Verification: checks from the probe delta, rendered as one standalone verifier script.

Checks compare entries of the ecosystem's probe output (files, tables, refs, records)
and the answer file; the verifier runs the same probe, so state is read one way only.

The rendered script (stdlib only) is the single implementation: the factory runs it in
the sandbox for the gate, and the Harbor export ships it as ``tests/verify.py``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Protocol

import jinja2
from pydantic import BaseModel

from environments.ecosystems import Ecosystem
from environments.sandbox import Sandbox, SandboxError
from schemas.ecosystem import ProbeSection
from schemas.trace import Trace
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.verify import comparisons, seal
from tasks.verify.comparisons import digest

_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parents[1] / "templates"),
    autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


_COMPARISONS = Path(comparisons.__file__).read_text(encoding="utf-8").strip() + "\n"
"""The source the rendered verifier embeds (compare modes and digests)."""
_SEAL = Path(seal.__file__).read_text(encoding="utf-8").strip() + "\n"
"""The source the rendered verifier embeds (what it does around its checks as root)."""
AUDIT = _SEAL + """
uid, logs = int(sys.argv[1].partition(":")[0]), sys.argv[2]
print(json.dumps({"reward": reward_of(logs), "exposed": exposures(uid, logs)}))
"""
"""Run as root after a verifier (``python3 - AGENT_USER LOGS``): the reward its logs folder
holds, as Harbor would read it, and what would let anything else change it
(:func:`tasks.verify.seal.exposures`)."""


class HiddenCase(Protocol):
    """What a reconstruct verifier embeds of a hidden case (``tasks.reconstruct.cases.Case`` is
    one)."""

    @property
    def name(self) -> str: ...
    @property
    def files(self) -> dict[str, bytes]: ...
    @property
    def checks(self) -> list[Check]: ...
    @property
    def args(self) -> list[str]: ...


class VerifierResult(BaseModel):
    reward: float
    checks_passed: int
    checks_total: int
    trials: int = 0
    trials_passed: int = 0
    """With ``answers``: how many answer texts were tried, and how many passed."""
    failed: tuple[str, ...] = ()
    """The failing checks (``section/key``, or the answer file), from the FAIL lines."""
    lines: tuple[str, ...] = ()
    """The verifier's ``PASS``/``FAIL`` line per check, as it printed them on stderr."""


def _produced(eco: Ecosystem, trace: Trace) -> dict[str, str | None]:
    """Entry key -> the compare mode its writer declares, for every write step's output."""
    produced: dict[str, str | None] = {}
    for st in trace.steps:
        tool = eco.spec.tool(st.tool)
        if tool.effect == "write" and tool.returns.from_param:
            produced[st.args[tool.returns.from_param]] = tool.returns.compare
    return produced


def derive_checks(eco: Ecosystem, trace: Trace, before: dict, after: dict) -> list[Check]:
    """One content check per changed probe entry, plus the answer, plus (per ``preserved``
    section) one check that every entry the trace leaves alone is unchanged, plus (per
    shared section) one check that no entry but those the reference left was added.

    In a ``strict`` probe section every changed entry must be a write step's declared
    output; elsewhere side effects are allowed and still checked.
    """
    produced = _produced(eco, trace)
    checks: list[Check] = []
    for section in sorted(set(before) | set(after)):
        conf = eco.spec.probe_sections.get(section, ProbeSection())
        if not conf.checked:
            continue
        old, new = before.get(section, {}), after.get(section, {})
        for key in sorted(set(old) | set(new)):
            if key in old and key in new and old[key] == new[key]:
                continue
            if conf.strict and key not in produced:
                raise StageFailure("verify", "unexpected_change",
                                   f"{section}/{key} changed but no step declares it")
            if key not in new:
                checks.append(Check(kind="state", section=section, key=key, expected=None,
                                    compare="absent"))
                continue
            compare = produced.get(key) or conf.compare
            checks.append(Check(kind="state", section=section, key=key, expected=new[key],
                                compare=compare))
    if trace.answer is not None:
        parser = eco.spec.tool(trace.steps[-1].tool).returns.parser
        checks.append(Check(kind="answer", key=eco.spec.answer_file, expected=trace.answer,
                            compare=ANSWER_COMPARE.get(parser, "text")))
    if not checks:
        raise StageFailure("verify", "no_outcome",
                           "the workflow changes nothing and answers nothing")
    return checks + unchanged_checks(eco, before, after) + only_checks(eco, after)


ANSWER_COMPARE = {"int": "int", "number": "number", "json": "json", "lines": "lines",
                  "csv": "lines"}
"""An answer's parser -> how its check compares (``text`` for the others): the format the
instruction promises for it."""


def only_checks(eco: Ecosystem, after: dict) -> list[Check]:
    """Per checked, shared probe section: the entries it may hold at the end, those
    ``after`` (the reference's end state) holds; any other was added unasked."""
    return [Check(kind="only", section=name, key=name, expected=sorted(after.get(name, {})))
            for name, conf in sorted(eco.spec.probe_sections.items())
            if conf.shared and conf.checked]


def unchanged_checks(eco: Ecosystem, before: dict, after: dict) -> list[Check]:
    """Per checked, ``preserved`` probe section: the digests of the entries ``before``
    holds and ``after`` holds unchanged (none for a section without such entries)."""
    checks = []
    for section in sorted(before):
        conf = eco.spec.probe_sections.get(section, ProbeSection())
        if not (conf.checked and conf.preserved):
            continue
        new = after.get(section, {})
        kept = {key: digest(value, conf.compare) for key, value in before[section].items()
                if key in new and new[key] == value}
        if kept:
            checks.append(Check(kind="unchanged", section=section, key=section,
                                expected=kept, compare=conf.compare))
    return checks


def render_verifier(checks: list[Check], probe_source: str, task_ref: str = "") -> str:
    """The standalone verifier script: the checks and the ecosystem's probe, embedded."""
    payload = json.dumps([c.model_dump() for c in checks], sort_keys=True)
    return _TEMPLATES.get_template("verifier.py.j2").render(
        checks_literal=repr(payload), probe_literal=repr(probe_source),
        comparisons=_COMPARISONS, seal=_SEAL, task_ref=task_ref or "(generated)")


def render_reconstruct_verifier(hidden: list[HiddenCase], eco: Ecosystem, program: str,
                                timeout_s: float, task_ref: str = "") -> str:
    """The standalone verifier of a reconstruct task: the program at ``program`` judged on
    the ``hidden`` cases, which it embeds (seed files and checks)."""
    payload = json.dumps([{"name": h.name, "checks": [c.model_dump() for c in h.checks],
                           "args": h.args,
                           "files": {p: base64.b64encode(b).decode() for p, b
                                     in sorted(h.files.items())}} for h in hidden],
                         sort_keys=True)
    return _TEMPLATES.get_template("reconstruct_verifier.py.j2").render(
        cases_literal=repr(payload), setup_literal=repr(eco.spec.setup or ""),
        probe_literal=repr(eco.probe_source), program_literal=repr(program),
        program=program, timeout=timeout_s, comparisons=_COMPARISONS, seal=_SEAL,
        task_ref=task_ref or "(generated)")


VERIFIER_TIMEOUT_S = 60.0


def verifier_argv(sandbox: Sandbox, answers: list[str] | None = None) -> list[str]:
    """How the factory runs a rendered verifier (its text on stdin): on the sandbox's
    workdir, and where the sandbox has a second user, as Harbor's ``tests/test.sh`` runs
    it — as root, writing its reward into the logs folder, after stopping every process
    of the agent's user (``tasks.verify.seal``)."""
    argv = ["python3", "-I", "-S", "-", "--root", sandbox.workdir]
    if sandbox.agent_user is not None:
        argv += ["--agent-user", sandbox.agent_user]
        if sandbox.logs_dir:
            argv += ["--logs", sandbox.logs_dir]
    return argv + (["--answers", json.dumps(answers)] if answers is not None else [])


ENTRY = 'if __name__ == "__main__":\n    sys.exit(main())\n'
"""How every rendered verifier ends: its entry point."""
AUDIT_MARK = "AUDIT "


def audited_entry(verifier_py: str, agent_user: str, logs: str) -> str | None:
    """``verifier_py`` whose entry point, once ``main()`` has returned, also prints the
    audit's line (after :data:`AUDIT_MARK`) from the same process, with the factory's own
    seal functions defined only then (a verifier's copy of them is not trusted to judge
    it): the checks and every line of the verifier run unchanged, and the audit reads the
    state the verifier leaves as a separate run after it would (its children are gone by
    then; what else could still write the reward is what the audit looks for).  None when
    the text does not end with :data:`ENTRY`."""
    if not verifier_py.endswith(ENTRY):
        return None
    uid = int(agent_user.partition(":")[0])
    return (verifier_py.removesuffix(ENTRY) + "_code = main()\nsys.stdout.flush()\n" + _SEAL
            + f"print({AUDIT_MARK!r} + json.dumps({{'reward': reward_of({logs!r}), "
            f"'exposed': exposures({uid}, {logs!r})}}))\nsys.exit(_code)\n")


def run_verifier(sandbox: Sandbox, verifier_py: str,
                 answers: list[str] | None = None,
                 timeout: float = VERIFIER_TIMEOUT_S) -> VerifierResult:
    """Run the rendered verifier as :func:`verifier_argv` says and read its result: with a
    logs folder, the reward as Harbor reads it — from ``reward.json`` once the verifier has
    exited, whatever wrote it (:func:`audited_entry`'s audit in the same run, or a run of
    :data:`AUDIT` after it when that printed none: the verifier was killed) — else its
    summary line; with ``answers``, the best of the trials where each replaces the answer
    file."""
    apart = sandbox.agent_user is not None and bool(sandbox.logs_dir)
    script = (audited_entry(verifier_py, sandbox.agent_user or "", sandbox.logs_dir or "")
              if apart else None) or verifier_py
    result = sandbox.exec(verifier_argv(sandbox, answers), stdin=script.encode(),
                          timeout=timeout, privileged=True)
    lines = result.stdout.strip().splitlines()
    audit = lines.pop()[len(AUDIT_MARK):] if lines and lines[-1].startswith(AUDIT_MARK) \
        else None
    marked = check_lines(result.stderr)
    failed = tuple(line.split()[2] for line in marked
                   if line.startswith("FAIL ") and len(line.split()) > 2)
    try:
        summary = VerifierResult.model_validate_json(lines[-1] if lines else "")
    except ValueError:
        if "OCI runtime exec failed" in result.stdout + result.stderr:  # the engine, not us
            raise SandboxError(f"the engine could not start the verifier: "
                               f"{result.stdout.strip()[-200:]}") from None
        raise StageFailure("validate", "environment",
                           f"verifier printed no summary (exit {result.exit_code}): "
                           f"{result.stderr.strip()[-200:]}") from None
    if apart:
        reward = _audit_result(audit, result.exit_code, result.stderr) if audit is not None \
            else _audited_reward(sandbox)
        summary = summary.model_copy(update={"reward": reward})
    return summary.model_copy(update={"failed": failed, "lines": marked})


def check_lines(output: str) -> tuple[str, ...]:
    """The ``PASS``/``FAIL`` line per check in a verifier's output."""
    return tuple(line for line in output.splitlines() if line.startswith(("PASS ", "FAIL ")))


def audited(reward: float | None, exposed: list[str]) -> float:
    """The reward a runner would read later: 1 when anything but the verifier may still
    change it (the reward file is then the agent's to write), else the file's (0 when
    there is none)."""
    return 1.0 if exposed else reward or 0.0


def _audited_reward(sandbox: Sandbox) -> float:
    assert sandbox.agent_user is not None and sandbox.logs_dir
    done = sandbox.exec(["python3", "-", sandbox.agent_user, sandbox.logs_dir],
                        stdin=AUDIT.encode(), timeout=60, privileged=True)
    lines = done.stdout.strip().splitlines()
    return _audit_result(lines[-1] if lines else "", done.exit_code, done.stderr)


def _audit_result(line: str, exit_code: int, stderr: str) -> float:
    """The audited reward from an audit's JSON ``line`` (StageFailure when it is none)."""
    try:
        found = json.loads(line)
        return audited(found["reward"], found["exposed"])
    except (ValueError, KeyError, TypeError):
        raise StageFailure("validate", "environment", "the reward audit printed nothing "
                           f"(exit {exit_code}): {stderr.strip()[-200:]}") from None
