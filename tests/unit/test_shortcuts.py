"""Shortcut controls and substitutes, built without a sandbox; hooks run on real tools."""

import json
import sqlite3
import subprocess

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Candidate, Step, WorkflowGraph
from schemas.verifier import Check
from tasks.execute.substitute import substitutes
from tasks.gate.shortcuts import literals, shortcut

FILES = load_ecosystem("files")
SQL = load_ecosystem("sql")
GIT = load_ecosystem("git")
FAULTS = load_ecosystem("tests/fixtures/ecosystems/faults")


def test_literals_are_the_code_spans_once_in_order():
    text = "Write `out/a.txt`: lines of `logs/x.log` with `ERROR`, then `out/a.txt` again."
    assert literals(text) == ["out/a.txt", "logs/x.log", "ERROR"]


def test_file_outputs_and_the_answer_are_faked_directly():
    checks = [Check(kind="state", section="files", key="out/a.txt", compare="text",
                    expected="x\n"),
              Check(kind="state", section="files", key="old.txt", compare="absent",
                    expected=None),
              Check(kind="answer", key="answer.txt", expected="3")]
    empty = shortcut(FILES, checks, "empty", "Count `ERROR` into `answer.txt`.")
    assert empty.files == {"out/a.txt": b"", "answer.txt": b""} and empty.answers == [""]
    filled = shortcut(FILES, checks, "literals", "Count `ERROR` into `answer.txt`.")
    assert filled.files["out/a.txt"] == b"ERROR\nanswer.txt\n"
    assert filled.answers == ["ERROR\nanswer.txt\n", "ERROR", "answer.txt"]


def test_sql_hook_creates_the_expected_columns(tmp_path):
    expected = {"tables": [{"id": "1", "city": "Oslo"}],
                "schema": {"type": "table", "columns": ["city", "id"]}}
    checks = [Check(kind="state", section=s, key="big_orders", expected=v)
              for s, v in expected.items()]
    for kind, rows in (("empty", []), ("literals", [("7", "7"), ("Oslo", "Oslo")])):
        fake = shortcut(SQL, checks, kind, "Keep orders over `7` from `Oslo`.")
        sqlite3.connect(tmp_path / "shop.db").close()
        done = subprocess.run(["bash", "-c", fake.script], cwd=tmp_path, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        con = sqlite3.connect(tmp_path / "shop.db")
        assert [r[1] for r in con.execute("PRAGMA table_info(big_orders)")] == ["city", "id"]
        assert con.execute("SELECT * FROM big_orders").fetchall() == rows
        con.close()


def test_git_hook_points_the_ref_at_a_fake_commit(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = ["-c", "user.name=A", "-c", "user.email=a@example.com"]
    subprocess.run(["git", *env, "commit", "-q", "--allow-empty", "-m", "root"], cwd=tmp_path,
                   check=True)
    checks = [Check(kind="state", section="branches", key="work/topic", expected="new:x")]
    fake = shortcut(GIT, checks, "literals", "Branch `work/topic` at `v1.0`.")
    done = subprocess.run(["bash", "-c", fake.script], cwd=tmp_path, capture_output=True,
                          text=True, env={"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x",
                                          "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@x",
                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    show = subprocess.run(["git", "show", "work/topic:literals.txt"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert show.stdout == "work/topic\nv1.0\n"


def _faults_step(tool: str, after_notes: bool = False) -> tuple[WorkflowGraph, Candidate]:
    """``tool`` on a seeded note, or (``after_notes``) on the copy write_notes made of it."""
    path = (Binding(kind="step", step="s1") if after_notes
            else Binding(kind="state", value="notes/note1.txt"))
    notes = Step(id="s1", tool="write_notes",
                 bind={"path": Binding(kind="state", value="notes/note1.txt"),
                       "out": Binding(kind="literal", value="out/copy.txt")})
    steps = [notes] if after_notes else []
    steps.append(Step(id=f"s{len(steps) + 1}", tool=tool, bind={
        "path": path, "out": Binding(kind="literal", value="out/x.txt")}))
    graph = WorkflowGraph(ecosystem="faults", shape="chain", steps=steps)
    return graph, Candidate(candidate_id="c", index=0, ecosystem="faults", seed=1, graph=graph)


def test_substitutes_return_the_failing_tools_type_and_keep_its_inputs():
    from schemas.trace import Observation, StepTrace

    graph, cand = _faults_step("explode")
    files = FAULTS.seed_state(1)
    options = substitutes(FAULTS, cand, graph, [], files, graph.steps[0])
    assert sorted(s.tool for s in options) == ["cat_notes", "write_notes"]  # file.text.copy
    new = next(s for s in options if s.tool == "write_notes")
    assert new.bind["path"] == Binding(kind="state", value="notes/note1.txt")
    assert new.bind["out"].value == "out/copy.txt"  # a fresh name from its own template
    assert substitutes(FAULTS, cand, graph, [], files, graph.steps[0]) == options
    graph, cand = _faults_step("hang")
    assert substitutes(FAULTS, cand, graph, [], files, graph.steps[0]) == []
    # a tool the graph already runs is no replacement: each tool runs once per task
    graph, cand = _faults_step("explode", after_notes=True)
    done = [StepTrace(step_id="s1", tool="write_notes", args={}, command="cp",
                      observation=Observation(exit_code=0, stdout="", stderr="", duration_s=0),
                      output="out/copy.txt", output_type="file.text.copy")]
    assert [s.tool for s in substitutes(FAULTS, cand, graph, done, files,
                                        graph.steps[1])] == ["cat_notes"]


def test_answer_trials_are_json_serializable():
    checks = [Check(kind="answer", key="answer.txt", expected="3")]
    fake = shortcut(FILES, checks, "literals", "a `b` c `d`")
    assert json.loads(json.dumps(fake.answers)) == ["b\nd\n", "b", "d"]
