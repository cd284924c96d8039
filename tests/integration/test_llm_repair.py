"""The optional LLM repairer inside execution, against a real local OpenAI-compatible server.

The planted `take_lines` fault passes `head -n several`; a good rebind proposal fixes the
argument and only that step re-runs; a bad or failing LLM falls back to truncation.
"""

import json
import os

import pytest

from environments.local.config import LocalConfig
from flows.run import candidate as candidate_module
from flows.run.candidate import build_candidate
from flows.run.providers import close_run
from tasks.execute.repair_llm import SYSTEM_PROMPT
from tests.integration.test_faults import FAULTS, planted
from tests.support.openai_server import OpenAIServer

RUN_ID = f"itest-llm-repair-{os.getpid()}"  # unique: other checkouts may share the engine


@pytest.fixture
def llm(monkeypatch, tmp_path):
    with OpenAIServer() as server:
        monkeypatch.setenv("TASKFACTORY_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("TASKFACTORY_LLM_MODEL", "test-model")
        candidate_module.llm_client.cache_clear()
        yield server
    candidate_module.llm_client.cache_clear()
    close_run(RUN_ID)


def test_good_rebind_repairs_only_the_failing_step(llm):
    llm.ok(json.dumps({"action": "rebind", "param": "n", "value": "1",
                       "rationale": "head needs a line count"}))
    outcome = build_candidate(planted("take_lines"), FAULTS, LocalConfig(), RUN_ID)
    assert outcome.task is not None, outcome.attempt.detail
    assert outcome.task.tools == ["write_notes", "take_lines"]
    assert outcome.attempt.repairs == ["llm_rebind s2 binding: n=1: head needs a line count"]
    trace = json.loads(outcome.task.trace_json)
    assert trace["steps"][1]["args"]["n"] == "1"
    assert "`1`" in outcome.task.instruction
    # one repair request; the same client then paraphrases and writes reasoning
    assert [r["messages"][1]["content"] for r in llm.requests].count(SYSTEM_PROMPT) == 1


@pytest.mark.parametrize("answer", ["malformed", "unknown-param", "server-error"])
def test_unusable_llm_answers_fall_back_to_truncation(llm, answer):
    if answer == "malformed":
        llm.malformed("certainly! {")
    elif answer == "unknown-param":
        llm.ok(json.dumps({"action": "rebind", "param": "lines", "value": "1"}))
    else:
        for _ in range(8):
            llm.status(500)
    outcome = build_candidate(planted("take_lines"), FAULTS, LocalConfig(), RUN_ID)
    assert outcome.task is not None and outcome.task.tools == ["write_notes"]
    assert outcome.attempt.repairs[0].startswith("truncate s2 binding")
    assert llm.request_count >= 1
