"""The purposeless-composition detectors of `taskfactory stats`: each flags its pattern
and only its pattern, and the section reads real shards (old ones without digests too)."""

from pathlib import Path

from tasks.dataset.query import connect
from tasks.dataset.report.compositions import COLUMNS, composition_rows, findings

V1 = Path(__file__).parents[1] / "fixtures" / "datasets" / "v1"


def _step(tool, args, output=None, output_type="file.text.lines", digest=None):
    return {"step_id": "s", "tool": tool, "args": args, "output": output,
            "output_type": output_type, "digest": digest}


def _lines(tool, src, out, digest):
    return _step(tool, {"path": src, "out": out}, out, digest=digest)


SEEDED = [{"kind": "unchanged", "section": "files", "key": "files",
           "expected": {"logs/app.log": "d-log", "config/app.json": "d-json"}}]


def test_a_coherent_task_is_not_flagged():
    trace = {"steps": [_lines("grep_lines", "logs/app.log", "out/errors.txt", "d1"),
                       _lines("sort_unique", "out/errors.txt", "out/sorted.txt", "d2"),
                       _step("count_lines", {"path": "out/sorted.txt"}, 3, "int")]}
    assert findings(trace, SEEDED) == set()


def test_an_entry_moved_back_onto_what_its_maker_started_from_equals_an_input():
    """A new branch off ``docs/milk`` with a commit picked on top, then rewound by one: the
    rewind's own inputs are only the branch and a count, but the branch now equals the
    input it was made from."""
    seeded = [{"kind": "unchanged", "section": "branches", "key": "branches",
               "expected": {"docs/milk": "d-milk", "main": "d-main"}}]
    pick = _step("fork_with_pick", {"base": "docs/milk", "name": "pick/patch",
                                    "commit": "b46a131ba8ba"}, "pick/patch", "git.branch", "d1")
    rewind = _step("rewind_branch", {"branch": "pick/patch", "steps": "1"}, "pick/patch",
                   "git.branch", "d-milk")
    assert findings({"steps": [pick, rewind]}, seeded) == {"output equals input"}
    below = _step("rewind_branch", {"branch": "pick/patch", "steps": "2"}, "pick/patch",
                  "git.branch", "d2")
    assert findings({"steps": [pick, below]}, seeded) == set()


def test_each_detector_flags_its_pattern():
    repeated = {"steps": [_lines("grep_lines", "logs/app.log", "out/a.txt", "d1"),
                          _lines("grep_lines", "out/a.txt", "out/b.txt", "d2")]}
    assert findings(repeated, SEEDED) == {"repeated tool"}
    identical = {"steps": [_lines("grep_lines", "logs/app.log", "out/a.txt", "d1"),
                           _lines("head_lines", "logs/app.log", "out/b.txt", "d1")]}
    assert findings(identical, SEEDED) == {"identical outputs"}
    copy_of_seed = {"steps": [_lines("sort_unique", "logs/app.log", "out/a.txt", "d-log")]}
    assert findings(copy_of_seed, SEEDED) == {"output equals input"}
    copy_of_step = {"steps": [_lines("grep_lines", "logs/app.log", "out/a.txt", "d1"),
                              _lines("sort_unique", "out/a.txt", "out/b.txt", "d1")]}
    assert findings(copy_of_step, SEEDED) == {"identical outputs", "output equals input"}
    json_lines = {"steps": [_lines("head_lines", "config/app.json", "out/a.txt", "d1")]}
    assert findings(json_lines, SEEDED) == {"JSON through a line tool"}
    old_json_lines = {"steps": [_step("sort_unique", {"path": "config/app.json",
                                                      "out": "out/a.txt"}, "out/a.txt",
                                      "file.text")]}
    assert findings(old_json_lines, []) == {"JSON through a line tool"}
    json_set = {"steps": [_step("json_set", {"path": "config/app.json", "key": "port",
                                             "value": "8080"}, "config/app.json",
                                "file.text.json", "d9")]}
    assert findings(json_set, SEEDED) == set()


def test_mixed_sources_are_followed_back_through_the_steps_that_wrote_them():
    mixed = {"steps": [_lines("grep_lines", "logs/app.log", "out/a.txt", "d1"),
                       _lines("csv_column", "data/customers.csv", "out/b.txt", "d2"),
                       _step("concat_files", {"first": "out/a.txt", "second": "out/b.txt",
                                              "out": "out/c.txt"}, "out/c.txt", digest="d3")]}
    assert findings(mixed, SEEDED) == {"mixed sources joined"}
    same = {"steps": [_lines("grep_lines", "logs/app.log", "out/a.txt", "d1"),
                      _lines("head_lines", "logs/app.log", "out/b.txt", "d2"),
                      _step("concat_files", {"first": "out/a.txt", "second": "out/b.txt",
                                             "out": "out/c.txt"}, "out/c.txt", digest="d3")]}
    assert findings(same, SEEDED) == set()
    # a new entry's name is no input: a count of a CSV committed as a .txt file joins nothing
    record = {"steps": [_step("record_line_count", {
        "source": "data/customers.csv", "path": "reports/lines.txt", "branch": "report/a",
        "message": "Add reports/lines.txt"}, "report/a", digest="d1")]}
    assert findings(record, SEEDED) == {"mixed sources joined"}  # without the spec: flagged
    new = frozenset({("record_line_count", "path"), ("record_line_count", "branch")})
    assert findings(record, SEEDED, new=new) == set()


def test_the_section_reads_shards_without_digests_as_not_measured():
    rows = composition_rows(connect(V1))
    assert [r[0] for r in rows] == ["files", "all"]
    files = dict(zip(COLUMNS, rows[0], strict=True))
    assert files["tasks"] == 6
    assert files["identical outputs"] == files["output equals input"] == "-"
    assert files["repeated tool"] == "33.3%"  # 2 of the 6 version-1 tasks run a tool twice


def _graph(fault, *binds):
    """A graph whose step n binds to the steps named in ``binds[n]``."""
    return {"fault": fault, "steps": [
        {"id": f"s{n + 1}", "bind": {f"in{k}": {"kind": "step", "step": up}
                                      for k, up in enumerate(ups)}}
        for n, ups in enumerate(binds)]}


def test_a_fix_task_with_work_unrelated_to_its_repair_is_flagged():
    trace = {"steps": []}
    related = _graph("bom", [], ["s1"], ["s2"])  # repair, then work on what it made
    assert findings(trace, [], related, repairs=1) == set()
    extra = _graph("bom", [], ["s1"], [])  # a third step that ignores the repair
    assert findings(trace, [], extra, repairs=1) == {"unrelated extra (fix)"}
    two_repairs = _graph("dup", [], [], ["s2"])
    assert findings(trace, [], two_repairs, repairs=2) == set()
    assert findings(trace, [], _graph(None, [], []), repairs=0) == set()  # a build task


def test_a_fix_report_the_fault_does_not_name_is_an_unrelated_extra():
    trace = {"steps": []}
    graph = _graph("negative_price", [], ["s1"])  # the repair, then a read of the table
    graph["steps"][0]["tool"], graph["steps"][1]["tool"] = "fix_negative_amounts", "count_where"
    assert findings(trace, [], graph, repairs=1) == set()  # the fault names no reports
    named = frozenset({"count_rows", "sum_column"})
    assert findings(trace, [], graph, repairs=1, report=named) == {"unrelated extra (fix)"}
    graph["steps"][1]["tool"] = "sum_column"
    assert findings(trace, [], graph, repairs=1, report=named) == set()


def test_the_readability_section_reads_real_shards():
    from tasks.dataset.report.readability import COLUMNS as READ
    from tasks.dataset.report.readability import readability_rows

    rows = readability_rows(connect(V1))
    assert [r[:3] for r in rows] == [["files", "build", 6], ["all", "", 6]]
    figures = dict(zip(READ, rows[-1], strict=True))
    assert figures["longest max"] >= figures["longest p90"] >= figures["longest median"] > 0


def test_a_step_taking_an_alias_the_task_made_is_flagged():
    tag = _step("tag_annotated", {"ref": "abc123", "name": "rc-1", "message": "m"}, "rc-1",
                "git.ref.tag")
    branch = _step("fork_with_pick", {"base": "rc-1", "name": "p", "commit": "c"}, "p",
                   "git.ref.branch")
    aside = _step("fork_with_pick", {"base": "abc123", "name": "p", "commit": "c"}, "p",
                  "git.ref.branch")
    aliases = frozenset({"tag_annotated"})
    assert findings({"steps": [tag, branch]}, [], aliases=aliases) == {"alias consumed"}
    assert findings({"steps": [tag, aside]}, [], aliases=aliases) == set()
    assert findings({"steps": [tag, branch]}, []) == set()  # no spec: not measured


def test_the_caught_patterns_and_verbatim_sections_read_real_shards():
    from tasks.dataset.report.compositions import CAUGHT_COLUMNS, caught_rows
    from tasks.dataset.report.verbatim import COLUMNS as VERBATIM
    from tasks.dataset.report.verbatim import verbatim_rows

    con = connect(V1)
    caught = dict(zip(CAUGHT_COLUMNS, caught_rows(con)[-1], strict=True))
    assert caught["ecosystem"] == "all" and caught["candidates"] >= 6
    given = dict(zip(VERBATIM, verbatim_rows(con)[-1], strict=True))
    assert given["tasks"] == 6 and given["arguments"] >= given["inputs"] > 0
