"""The optional paraphrase passes the same limits as the rendered text, over real HTTP
(a scripted OpenAI-compatible server this test starts; no model can run here)."""

from tasks.instruct.instruction import render_instruction
from tasks.instruct.paraphrase import paraphrase_instruction
from tasks.instruct.preserve import required_literals
from tasks.rules.deliverables import goal_checks
from tests.support.openai_server import OpenAIServer, make_client
from tests.unit.test_instructions import FILES, branch_task


def _task():
    graph, trace, checks = branch_task()
    kept = goal_checks(FILES.spec, graph, trace, checks)
    instruction = render_instruction(FILES, graph, trace, seed=2, checks=kept)
    return instruction, required_literals(FILES.spec, graph, trace, kept, "goal"), trace.answer


def _rewrite(instruction, reply):
    with OpenAIServer() as srv:
        srv.ok({"instruction": reply})
        client = make_client(srv)
        out = paraphrase_instruction(client, instruction, _task()[1], answer="7")
        return out, client.stats.rejected


def test_a_readable_paraphrase_is_kept():
    instruction, _, _ = _task()
    text = "Please do this for me.\n\n" + instruction.text
    out, rejected = _rewrite(instruction, text)
    assert (out.text, rejected) == (text, 0)
    assert out.template_id.endswith("+llm:test-model")


def test_a_run_on_paraphrase_keeping_every_literal_is_rejected():
    instruction, required, _ = _task()
    run_on = " and then ".join(line.strip(" -.") for line in instruction.text.splitlines()
                               if line.strip()) + "."
    assert all(f"`{s}`" in run_on for s in required.spans)
    out, rejected = _rewrite(instruction, run_on)
    assert (out, rejected) == (instruction, 1)


def test_a_paraphrase_that_shows_the_answer_is_rejected():
    instruction, _, answer = _task()
    shown = instruction.text.replace("Find out", f"There are {answer} lines. Find out")
    out, rejected = _rewrite(instruction, shown + f"\nThe count is {answer}.")
    assert (out, rejected) == (instruction, 1)
