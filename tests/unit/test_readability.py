"""The readability counter (one function for the instruct stage, stats and the benchmark)
and goal-level instructions rendered as short sentences."""

import pytest

from environments.ecosystems import load_ecosystem
from schemas.graph import Binding, Step, WorkflowGraph
from schemas.trace import Observation, StepTrace, Trace
from schemas.verifier import Check
from tasks.core.failures import StageFailure
from tasks.instruct.instruction import render_instruction
from tasks.rules.readability import (
    MAX_WORDS,
    check_readable,
    figures,
    nesting,
    readability,
    sentences,
    words,
)


def test_a_code_span_is_one_word_and_sentences_split_at_their_ends():
    text = ("Write `a very long literal with spaces. And a stop` to `out.txt`. Then stop!\n\n"
            "- `answer.txt`: the number of lines, as a plain integer.\n"
            "Deliver this:\n\n```\nfenced code. is. not. prose.\n```\n")
    found = sentences(text)
    assert [words(s) for s in found] == [4, 2, 9, 2]
    assert readability(text).longest == 9


def test_nesting_counts_descriptions_inside_descriptions():
    def depth(text):
        return nesting(sentences(text)[0])

    assert depth("Save the output in the root of the repository.") == 0  # prepositions only
    assert depth("Count the lines that contain `x` in `a.txt`.") == 0  # one description
    assert depth("the ids of the tickets of the team led by `x` whose status is `y`") == 1
    deep = ("Write the subject of the commit the new branch that starts at the commit the "
            "tag on the tip of `main` points to points to.")
    assert depth(deep) == 2
    # clauses are counted apart
    assert depth("Find the team led by `a`, then the ticket whose title is `b`.") == 0


def test_a_repeated_six_word_sequence_is_found_outside_code_spans_only():
    assert readability("Put the lines of the file here. Put the lines of the file there.") \
        .repeated == "put the lines of the file"
    assert readability("the lines of `a` in order and the lines of `b` in order").repeated == ""


def test_an_unreadable_instruction_is_rejected_naming_its_sentence():
    long = " ".join(["word"] * (MAX_WORDS + 1)) + "."
    with pytest.raises(StageFailure) as err:
        check_readable(f"Short one.\n\n{long}\n")
    assert (err.value.stage, err.value.reason) == ("instruct", "unreadable")
    assert "word word" in str(err.value) and f"{MAX_WORDS + 1} words" in str(err.value)
    with pytest.raises(StageFailure, match="nests descriptions 2 deep.*the tag"):
        check_readable("Name the branch that starts at the commit the tag whose message is "
                       "`x` points to.")
    assert check_readable("Copy `a` to `b`.").longest == 4


def test_figures_over_a_set_of_instructions():
    texts = ["One two three.", "One two three four five.", " ".join(["w"] * 45) + "."]
    f = figures(texts)
    assert (f.instructions, f.median, f.max, f.nesting) == (3, 5, 45, 0)
    assert f.over == pytest.approx(1 / 3)
    assert figures([]).instructions == 0


def _step(step_id, tool, args, output=None, output_type="git.ref.branch", stdout=""):
    return StepTrace(step_id=step_id, tool=tool, args=args, command=f"run {tool}",
                     observation=Observation(exit_code=0, stdout=stdout, stderr="",
                                             duration_s=0.01),
                     output=output, output_type=output_type)


def test_a_deep_git_workflow_reads_as_short_sentences():
    """lookup -> annotated tag -> branch from it -> cherry-pick -> subject of its tip: the
    issue's compiler sentence.  Each described thing is a sentence of its own."""
    git = load_ecosystem("git")
    step = {"kind": "step"}
    graph = WorkflowGraph(ecosystem="git", shape="chain", steps=[
        Step(id="s1", tool="last_commit_touching",
             bind={"path": Binding(kind="state", value="docs/birth.md")}),
        Step(id="s2", tool="tag_annotated", bind={
            "ref": Binding(**step, step="s1"), "name": Binding(kind="literal", value="rc-1"),
            "message": Binding(kind="literal", value="Release candidate")}),
        Step(id="s3", tool="create_branch", bind={
            "start": Binding(**step, step="s2"),
            "name": Binding(kind="literal", value="pick/patch")}),
        Step(id="s4", tool="tip_subject", bind={"ref": Binding(**step, step="s3")}),
    ])
    trace = Trace(steps=[
        _step("s1", "last_commit_touching", {"path": "docs/birth.md"}, output="abc123",
              output_type="git.ref.commit", stdout="abc123\n"),
        _step("s2", "tag_annotated", {"ref": "abc123", "name": "rc-1",
                                      "message": "Release candidate"}, output="rc-1"),
        _step("s3", "create_branch", {"start": "rc-1", "name": "pick/patch"},
              output="pick/patch"),
        _step("s4", "tip_subject", {"ref": "pick/patch"}, output_type="text",
              stdout="Add birth notes\n"),
    ], answer="Add birth notes")
    checks = [Check(kind="state", section="tags", key="rc-1", expected="x"),
              Check(kind="state", section="branches", key="pick/patch", expected="x"),
              Check(kind="answer", key="answer.txt", expected="Add birth notes")]
    for seed in range(5):
        instruction = render_instruction(git, graph, trace, seed=seed, checks=checks)
        found = check_readable(instruction.text)
        assert found.nesting <= 1 and found.longest <= 25, instruction.text
        assert instruction.sentences[0].text.startswith("Find the ")
        assert "a new annotated tag on that commit, with the message" in instruction.text


def _then_pick(tool: str, args: dict[str, str], commit: str) -> tuple[WorkflowGraph, Trace]:
    """``tool`` makes branch ``pick/patch`` from the seeded values ``args``; then ``commit``
    is cherry-picked onto it."""
    graph = WorkflowGraph(ecosystem="git", shape="chain", steps=[
        Step(id="s1", tool=tool, bind={
            **{p: Binding(kind="state", value=v) for p, v in args.items()},
            "name": Binding(kind="literal", value="pick/patch")}),
        Step(id="s2", tool="cherry_pick", bind={
            "branch": Binding(kind="step", step="s1"),
            "commit": Binding(kind="state", value=commit)}),
    ])
    trace = Trace(steps=[
        _step("s1", tool, {**args, "name": "pick/patch"}, output="pick/patch"),
        _step("s2", "cherry_pick", {"branch": "pick/patch", "commit": commit},
              output="pick/patch"),
    ])
    return graph, trace


def test_literals_described_alike_are_found_in_one_sentence():
    """Three commits named by their subject lines: one sentence finds them all, each
    named by a letter, so no 'Find the commit whose subject line is' repeats."""
    from tasks.rules.deliverables import flow

    git = load_ecosystem("git")
    graph, trace = _then_pick("create_branch", {"start": "aaa"}, "bbb")
    described = {"aaa": "the commit whose subject line is `Add a`",
                 "bbb": "the commit whose subject line is `Fix b`"}
    checks = [Check(kind="state", section="branches", key="pick/patch", expected="x")]
    assert flow(git.spec, graph, trace, checks).listed
    instruction = render_instruction(git, graph, trace, seed=1, checks=checks,
                                     described=described)
    assert ("Find the commit whose subject line is `Add a` (call it commit A), and likewise "
            "`Fix b` (commit B).") in instruction.text
    assert readability(instruction.text).repeated == ""


def test_an_aside_said_before_is_said_as_above():
    """A rule in parentheses is said once: a second cherry-pick reads "(as above)", and an
    aside a long phrase made a sentence of its own goes back into its sentence."""
    from tasks.rules.discourse import AGAIN, said_once

    pick = "(one new commit keeping that commit's author and subject)"
    text = (f"- branch `p`: a new branch at `main` with `a` on top. ({pick[1:]}.\n"
            f"- branch `p`: `b` cherry-picked onto its tip {pick}.\n"
            f"- branch `q`: `c` reverted. {pick[0]}One new commit keeping that commit's author "
            "and subject).\n- `x` (short aside) and `y` (short aside).")
    out = said_once(text)
    assert out.count("keeping that commit's author") == 1
    assert f"onto its tip {AGAIN}." in out and f"`c` reverted {AGAIN}." in out
    assert out.count("(short aside)") == 2  # under six words: no repeated 6-gram to avoid
    revert = "(made by `git revert`, with its default message)"
    assert said_once(f"`a` {revert}; `b` {revert}") == f"`a` {revert}; `b` {AGAIN}"
    other = "(made by `git  revert`, with its default message)"
    assert said_once(f"`a` {revert}; `b` {other}") == f"`a` {revert}; `b` {other}"
    # "(as above)" after a different aside would point at that one: said in full again
    assert said_once(f"`a` {pick}; `b` {revert}; `c` {pick}") == \
        f"`a` {pick}; `b` {revert}; `c` {pick}"


def test_two_cherry_picks_say_how_once():
    """A new branch with one cherry-pick, then a second cherry-pick onto it: the second
    item does not repeat the first one's aside, and no 6-word sequence repeats."""
    git = load_ecosystem("git")
    graph, trace = _then_pick("fork_with_pick", {"base": "main", "commit": "aaa111"}, "bbb222")
    checks = [Check(kind="state", section="branches", key="pick/patch", expected="x")]
    for seed in range(4):
        text = render_instruction(git, graph, trace, seed=seed, checks=checks).text
        assert text.count("keeping that commit's author and subject") == 1, text
        assert readability(text).repeated == "", text


def test_an_entry_named_by_a_letter_is_not_said_after_its_own_noun():
    from tasks.rules.discourse import without_stutter

    assert without_stutter("a new ticket for team team A, then commit commit B.") == \
        "a new ticket for team A, then commit B."
    kept = "the team that team A leads; `team team A`; the the"  # no letter after the pair
    assert without_stutter(kept) == kept.replace("`team A`", "`team team A`")
    assert without_stutter("a new subtask for team that team. `team that team`") == \
        "a new subtask for that team. `team that team`"



def test_an_order_note_and_a_lookup_note_are_said_as_one_rule(monkeypatch):
    """Items in order and descriptions of the starting state, said in two sentences, read
    as contradicting each other: an instruction that needs both says one rule."""
    import tasks.instruct.instruction as instruction
    from tasks.instruct.instruction import PHRASES, render_instruction

    git = load_ecosystem("git")
    graph, trace = _then_pick("create_branch", {"start": "aaa"}, "bbb")
    goal = PHRASES["goal"]
    notes = {k: set(goal[k].values()) for k in
             ("order_notes", "lookup_notes", "order_lookup_notes")}

    def said(text: str) -> set[str]:
        return {k for k, v in notes.items() if any(n in text for n in v)}

    for ordered, looked_up, expected in ((True, True, {"order_lookup_notes"}),
                                         (True, False, {"order_notes"}),
                                         (False, True, {"lookup_notes"}), (False, False, set())):
        monkeypatch.setattr(instruction, "_ordered", lambda *_, o=ordered: o)
        monkeypatch.setattr(instruction, "_describes", lambda *_, d=looked_up: d)
        for seed in range(3):
            text = render_instruction(git, graph, trace, seed=seed).text
            assert said(text) == expected, (ordered, looked_up, text)


def test_an_aside_made_a_sentence_of_its_own_loses_its_parentheses():
    from tasks.rules.discourse import unbracketed

    text = ("- branch `b`: a new branch on top. (One new commit keeping `x`'s author).\n"
            "- the rows (same names, same order); then (as above). (`code` first).")
    assert unbracketed(text) == (
        "- branch `b`: a new branch on top. One new commit keeping `x`'s author.\n"
        "- the rows (same names, same order); then (as above). (`code` first).")
