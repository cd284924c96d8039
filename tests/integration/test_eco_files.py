"""The built-in ``files`` ecosystem's incident lookups in real containers.

The chain ``most_errors_log`` -> ``top_error_component`` -> ``first_error_time`` (or
``last_error_time``) -> ``log_window`` (and ``component_lines`` beside it) runs by hand on
seeded workspaces at scale 1 and at the hard tier's scale 10: each command and each of its
alternatives prints (or writes) what Python computes from the seeded logs, ties of the
component count go to the first name alphabetically, and the ambiguity check fails a log
without an ERROR line.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timedelta

import pytest

from environments.docker.config import DockerConfig
from environments.ecosystems import load_ecosystem
from flows.run.providers import close_run, provider_for
from tasks.core.commands import render_shell
from tasks.execute.realize import probe, realize

pytestmark = pytest.mark.docker

RUN_ID = f"itest-eco-files-{os.getpid()}"  # unique: other checkouts may share the engine
FILES = load_ecosystem("files")
STAMP = "%Y-%m-%dT%H:%M:%SZ"


@pytest.fixture(scope="module")
def backend():
    yield DockerConfig()
    close_run(RUN_ID)


class Workspace:
    """A realized seeded workspace in one sandbox; runs a tool's command or alternatives."""

    def __init__(self, sandbox, seed: int, scale: int):
        self.sb = sandbox
        realize(sandbox, FILES, seed, scale=scale)
        self.logs = {p: t for p, t in probe(sandbox, FILES)["files"].items()
                     if p.startswith("logs/") and p.endswith(".log")}

    def sh(self, command: str) -> tuple[int, str]:
        result = self.sb.exec(["bash", "-c", "set -euo pipefail\n" + command], timeout=60)
        return result.exit_code, result.stdout

    def every(self, tool_name: str, args: dict[str, str]) -> list[str]:
        """What the tool's command and each alternative print (a write: the file it
        writes), each checked to exit 0."""
        tool = FILES.spec.tool(tool_name)
        assert tool.alternatives, f"{tool_name} has no alternative"
        outs = []
        for command in [tool.command, *tool.alternatives]:
            if "out" in args:
                self.sh(f"rm -f -- {args['out']}")
            code, out = self.sh(render_shell(command, args))
            assert code == 0, (tool_name, command, out)
            if "out" in args:
                code, out = self.sh(f"cat -- {args['out']}")
            outs.append(out)
        return outs

    def ambiguous(self, tool_name: str, args: dict[str, str]) -> bool:
        check = FILES.spec.tool(tool_name).ambiguity_check
        assert check
        return self.sb.exec(["bash", "-c", render_shell(check, args)], timeout=60).exit_code != 0


def _words(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def _top_component(text: str) -> str:
    counts = Counter(w[2][1:-1] for w in _words(text) if w[1] == "ERROR")
    return min(counts, key=lambda c: (-counts[c], c))


@pytest.mark.parametrize(("seed", "scale"), [(3, 1), (11, 1), (3, 10)])
def test_the_incident_chain_by_hand(backend, seed, scale):
    with provider_for(backend, RUN_ID).sandbox() as sb:
        ws = Workspace(sb, seed, scale)
        lines = [line for p in sorted(ws.logs) for line in ws.logs[p].splitlines()]

        (log,) = set(ws.every("most_errors_log", {}))
        log = log.strip()
        errors = {p: sum(w[1] == "ERROR" for w in _words(t)) for p, t in ws.logs.items()}
        assert errors[log] == max(errors.values())

        for path in sorted(ws.logs):  # the lookup takes any log, the chain's and the other
            component = _top_component(ws.logs[path])
            assert {o.strip() for o in ws.every("top_error_component", {"path": path})} \
                == {component}
            assert not ws.ambiguous("top_error_component", {"path": path})

        component = _top_component(ws.logs[log])
        first = min(w[0] for w in map(str.split, lines)
                    if w[1] == "ERROR" and w[2] == f"[{component}]")
        assert {o.strip() for o in ws.every("first_error_time", {"component": component})} \
            == {first}
        last = max(w[0] for w in map(str.split, lines)
                   if w[1] == "ERROR" and w[2] == f"[{component}]")
        assert {o.strip() for o in ws.every("last_error_time", {"component": component})} \
            == {last}

        mine = sorted((line for line in lines if line.split()[2] == f"[{component}]"),
                      key=str.encode)
        got = ws.every("component_lines", {"component": component,
                                           "out": "out/component_lines.txt"})
        assert set(got) == {"".join(line + "\n" for line in mine)}
        assert len(mine) < len(lines)

        since = (datetime.strptime(first, STAMP) - timedelta(minutes=10)).strftime(STAMP)
        window = sorted((line for line in lines if since <= line[:20] <= first), key=str.encode)
        got = ws.every("log_window", {"time": first, "out": "out/before_incident.txt"})
        assert set(got) == {"".join(line + "\n" for line in window)}
        assert any(line.split()[1:3] == ["ERROR", f"[{component}]"] for line in window)
        assert len(window) < len(lines)


def test_a_tie_goes_to_the_first_name_and_a_quiet_log_is_ambiguous(backend):
    """Also: the window holds both its ends, across logs, and nothing outside them."""
    with provider_for(backend, RUN_ID).sandbox() as sb:
        ws = Workspace(sb, 5, 1)
        levels = [("ERROR", "zeta"), ("ERROR", "beta"), ("WARN", "alpha"), ("ERROR", "beta"),
                  ("ERROR", "zeta"), ("INFO", "alpha")]
        tied = "".join(f"2026-02-01T10:00:0{i}Z {level:<5} [{name}] event {i}\n"
                       for i, (level, name) in enumerate(levels))
        quiet = "2026-02-01T10:00:00Z INFO  [alpha] all is well\n"
        sb.write_files({"out/tied.log": tied.encode(), "out/quiet.log": quiet.encode()})
        assert {o.strip() for o in ws.every("top_error_component", {"path": "out/tied.log"})} \
            == {"beta"}
        assert not ws.ambiguous("top_error_component", {"path": "out/tied.log"})
        assert ws.ambiguous("top_error_component", {"path": "out/quiet.log"})

        def line(stamp: str, level: str, name: str) -> str:
            return f"2026-02-01T{stamp}Z {level:<5} [{name}] event at {stamp}\n"
        sb.write_files({
            "logs/one.log": "".join(line(t, "INFO", "alpha") for t in
                                    ("09:49:59", "09:50:00", "09:55:00", "10:00:01")).encode(),
            "logs/two.log": "".join(line(t, lv, "beta") for t, lv in
                                    (("09:49:58", "WARN"), ("09:58:00", "INFO"),
                                     ("10:00:00", "ERROR"), ("10:07:00", "ERROR"))).encode()})
        assert {o.strip() for o in ws.every("first_error_time", {"component": "beta"})} \
            == {"2026-02-01T10:00:00Z"}
        assert {o.strip() for o in ws.every("last_error_time", {"component": "beta"})} \
            == {"2026-02-01T10:07:00Z"}
        want = [line("09:50:00", "INFO", "alpha"), line("09:55:00", "INFO", "alpha"),
                line("09:58:00", "INFO", "beta"), line("10:00:00", "ERROR", "beta")]
        assert set(ws.every("log_window", {"time": "2026-02-01T10:00:00Z", "out": "out/w.txt"})) \
            == {"".join(want)}
        assert set(ws.every("component_lines", {"component": "alpha", "out": "out/a.txt"})) \
            == {"".join(line(t, "INFO", "alpha")
                        for t in ("09:49:59", "09:50:00", "09:55:00", "10:00:01"))}
