"""LLM paraphrase and reasoning over real HTTP, against a local OpenAI-compatible server.

Candidates run in real local sandboxes; the LLM is the test server (the real thing, an
actual model, cannot run here), scripted to answer from the prompt it receives.
"""

import json
import re

import pytest

from environments.local.config import LocalConfig
from flows.run import candidate as candidate_module
from flows.run.candidate import build_candidate, ecosystem
from flows.run.providers import close_run
from tasks.instruct import paraphrase
from tasks.plan.planner import plan_candidates
from tasks.trajectories import reasoning
from tests.support.openai_server import Behaviour, OpenAIServer

RUN_ID = "itest-llm-instructions"
CANDIDATES, _ = plan_candidates(ecosystem("files"), 3, run_seed=21)


def _instruction_in(body):
    user = body["messages"][-1]["content"]
    return user.split("Instruction:\n\n", 1)[1].split("\nLiterals that must stay", 1)[0]


def _literals_in(body):
    return re.findall(r"^- `(.*)`$", body["messages"][-1]["content"], re.M)


def responder(drop_literal: bool, quote_unseen: bool, run_on: bool = False):
    """Answers each request by the stage that sent it (its system prompt)."""

    def answer(body):
        system = body["messages"][1]["content"]
        if system == paraphrase.SYSTEM_PROMPT:
            text = _instruction_in(body)
            if drop_literal:  # lose the code span of one required literal
                literal = _literals_in(body)[0]
                text = text.replace(f"`{literal}`", literal)
            if run_on:  # every literal kept, in one sentence of more than 40 words
                text = "x\n" + " and then ".join(
                    line.strip(" -.") for line in text.splitlines() if line.strip()) \
                    + " and then" + " make sure that all of it holds as asked" * 5
            return {"instruction": "Here is the job, in other words.\n\n"
                                   + text.split("\n", 1)[1]}
        if system == reasoning.SYSTEM_PROMPT:
            payload = json.loads(body["messages"][-1]["content"])
            if quote_unseen:
                return {"reasoning": "This will print `987654321`, I expect."}
            step = "the final answer" if payload["next_call"] is None else \
                f"a call to {payload['next_call']['name']}"
            return {"reasoning": f"Model reasoning: {step} comes next."}
        return {"action": "give_up", "rationale": "not scripted"}

    return answer


@pytest.fixture
def llm(monkeypatch):
    def start(**script):
        srv = OpenAIServer(default=Behaviour(compute=responder(**script))).start()
        monkeypatch.setenv("TASKFACTORY_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("TASKFACTORY_LLM_MODEL", "test-model")
        candidate_module.llm_client.cache_clear()
        servers.append(srv)
        return srv

    servers: list[OpenAIServer] = []
    yield start
    for srv in servers:
        srv.stop()
    candidate_module.llm_client.cache_clear()
    close_run(RUN_ID)


def _build():
    return [build_candidate(c, "files", LocalConfig(), RUN_ID) for c in CANDIDATES]


def _template_run(monkeypatch):
    monkeypatch.delenv("TASKFACTORY_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    candidate_module.llm_client.cache_clear()
    return {o.attempt.candidate_id: o for o in _build() if o.task}


def test_a_faithful_paraphrase_and_grounded_reasoning_are_kept(llm, monkeypatch, tmp_path):
    plain = _template_run(monkeypatch)
    monkeypatch.setenv("TASKFACTORY_LLM_CACHE_DIR", str(tmp_path / "cache"))
    srv = llm(drop_literal=False, quote_unseen=False)
    outcomes = [o for o in _build() if o.task]
    assert outcomes and len(outcomes) == len(plain)
    client = candidate_module.llm_client()
    assert client.stats.rejected == 0 and client.stats.requests == srv.request_count > 0
    for o in outcomes:
        base = plain[o.attempt.candidate_id].task
        assert o.task.instruction.startswith("Here is the job, in other words.")
        assert o.task.template_id == f"{base.template_id}+llm:test-model"
        assert o.task.instruction_literals == base.instruction_literals
        assert all(f"`{lit}`" in o.task.instruction for lit in o.task.instruction_literals)
        assert o.task.task_id != base.task_id  # the instruction is part of the content hash
        for row in o.trajectories:
            assert row.rendering == "llm:test-model"
            if row.supervision != "masked":
                said = [m.reasoning_content for m in row.messages if m.role == "assistant"]
                assert said and all(s.startswith("Model reasoning:") for s in said)
    # a second process (new client) answers from the disk cache: no HTTP, same tasks
    sent = srv.request_count
    candidate_module.llm_client.cache_clear()
    again = [o.task.task_id for o in _build() if o.task]
    assert srv.request_count == sent and candidate_module.llm_client().stats.cache_hits > 0
    assert again == [o.task.task_id for o in outcomes]


def test_a_paraphrase_that_drops_a_literal_and_unseen_reasoning_fall_back(llm, monkeypatch):
    plain = _template_run(monkeypatch)
    srv = llm(drop_literal=True, quote_unseen=True)
    outcomes = [o for o in _build() if o.task]
    assert len(outcomes) == len(plain)
    client = candidate_module.llm_client()
    purposes = [r["messages"][1]["content"] for r in srv.requests]
    assert purposes.count(paraphrase.SYSTEM_PROMPT) == len(outcomes)
    reasoning_calls = purposes.count(reasoning.SYSTEM_PROMPT)
    assert reasoning_calls > 0
    assert client.stats.rejected == len(outcomes) + reasoning_calls
    for o in outcomes:
        base = plain[o.attempt.candidate_id].task
        assert o.task.instruction == base.instruction  # the template text stands
        assert o.task.template_id == base.template_id
        full = next(r for r in o.trajectories if r.supervision == "full")
        assert not any("987654321" in (m.reasoning_content or "") for m in full.messages)
        base_full = next(r for r in plain[o.attempt.candidate_id].trajectories
                         if (r.supervision, r.action_space) == ("full", full.action_space))
        assert [m.reasoning_content for m in full.messages] == \
            [m.reasoning_content for m in base_full.messages]


def test_an_unreadable_paraphrase_falls_back_and_changes_no_verifier(llm, monkeypatch):
    """A paraphrase that keeps every literal but runs on in one sentence fails the
    readability limits: the rendered text stands, and the verifier and answer are the
    task's own either way."""
    plain = _template_run(monkeypatch)
    llm(drop_literal=False, quote_unseen=False, run_on=True)
    outcomes = [o for o in _build() if o.task]
    assert len(outcomes) == len(plain)
    assert candidate_module.llm_client().stats.rejected >= len(outcomes)
    for o in outcomes:
        base = plain[o.attempt.candidate_id].task
        assert o.task.instruction == base.instruction
        assert (o.task.verifier_py, o.task.answer, o.task.checks_json) == \
            (base.verifier_py, base.answer, base.checks_json)

