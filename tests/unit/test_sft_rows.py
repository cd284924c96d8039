"""The SFT export's pure parts: option checks, row shapes, reasoning placement, family
warnings, the files beside an export, and the truncation marker of observations."""

import json
from pathlib import Path

import pytest
import yaml

from schemas.trace import Observation
from tasks.exports.sft import ExportError
from tasks.exports.sft.configs import Export, axolotl_yaml, merged_dataset_info
from tasks.exports.sft.export import Options, resolve
from tasks.exports.sft.families import FAMILIES, reasoning_warning
from tasks.exports.sft.rows import hf_message, openai_message, sharegpt_turns
from tasks.trajectories.render import observation_text

CALL = {"role": "assistant", "content": "", "reasoning_content": "I list the files.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "ls", "arguments": '{"path": "."}'}}],
        "train": True, "weight": 1}
RESULT = {"role": "tool", "content": "a.txt", "tool_call_id": "call_1", "name": "ls",
          "train": False, "weight": 0}
FINAL = {"role": "assistant", "content": "Done.", "reasoning_content": "All listed.",
         "train": True, "weight": 1}


@pytest.mark.parametrize(("options", "needle"), [
    (Options("openai", "actobs"), "assistant messages only"),
    (Options("sharegpt", "actobs"), "cannot mark"),
    (Options("openai", arguments="object"), "JSON strings only"),
    (Options("sharegpt", arguments="string"), "does not apply"),
    (Options("openai", reasoning_key="thinking"), "is an hf key"),
    (Options("sharegpt", tokenizer=Path("t")), "use --format hf"),
    (Options("hf", arguments="string", tokenizer=Path("t")), "does not apply with --tokenizer"),
])
def test_combinations_a_target_cannot_express_are_refused_in_one_line(options, needle):
    with pytest.raises(ExportError) as err:
        resolve(options)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_each_format_gets_its_defaults():
    assert (resolve(Options("hf")).arguments, resolve(Options("hf")).reasoning_key) == \
        ("object", "reasoning_content")
    openai = resolve(Options("openai", "full", arguments="string"))
    assert (openai.arguments, openai.reasoning_key) == ("string", "inline")
    assert resolve(Options("sharegpt", "full")).reasoning_key == "inline"


def test_openai_messages_keep_documented_keys_with_string_arguments_and_inline_reasoning():
    call, result = openai_message(CALL), openai_message(RESULT)
    assert call == {"role": "assistant",
                    "content": "<think>\nI list the files.\n</think>\n\n",
                    "tool_calls": [{"id": "call_1", "type": "function",
                                    "function": {"name": "ls", "arguments": '{"path": "."}'}}],
                    "weight": 1}
    assert result == {"role": "tool", "content": "a.txt", "tool_call_id": "call_1"}
    masked = openai_message({**CALL, "reasoning_content": None})
    assert "content" not in masked and masked["tool_calls"]


@pytest.mark.parametrize("key", ["reasoning_content", "thinking", "inline"])
def test_hf_messages_put_reasoning_where_the_key_says(key):
    m = hf_message(FINAL, "object", key)
    if key == "inline":
        assert m["content"] == "<think>\nAll listed.\n</think>\n\nDone." and len(m) == 4
    else:
        assert m[key] == "All listed." and m["content"] == "Done."
    assert hf_message(CALL, "object", key)["tool_calls"][0]["function"]["arguments"] == \
        {"path": "."}


def test_sharegpt_thought_words_follow_the_family():
    gpt_oss = sharegpt_turns([CALL, RESULT, FINAL], FAMILIES["gpt_oss"].thought)
    assert gpt_oss[0]["value"].startswith("<|channel|>analysis<|message|>I list the files.")
    mistral = sharegpt_turns([CALL, RESULT, FINAL], FAMILIES["mistral"].thought)
    assert json.loads(mistral[0]["value"]) == {"name": "ls", "arguments": {"path": "."}}
    assert mistral[-1] == {"from": "gpt", "value": "<think>\nAll listed.\n</think>\n\nDone."}


def test_family_warnings():
    assert reasoning_warning("hf", "reasoning_content", "qwen3") is None
    assert reasoning_warning("hf", "thinking", "gpt_oss") is None
    assert reasoning_warning("hf", "inline", "llama3") is None
    assert reasoning_warning("hf", "reasoning_content", None) is None
    assert reasoning_warning("openai", "inline", "qwen2.5") is None
    assert "--reasoning-key inline" in reasoning_warning("hf", "reasoning_content", "qwen2.5")
    assert "--reasoning-key thinking" in reasoning_warning("hf", "reasoning_content", "gpt_oss")


def test_dataset_info_merges_and_refuses_a_file_it_cannot_read(tmp_path):
    e = Export(tmp_path / "sft.jsonl", "sharegpt", "full", "inline", False, "qwen3")
    (tmp_path / "dataset_info.json").write_text('{"mine": {"file_name": "m.json"}}')
    assert set(json.loads(merged_dataset_info(e))) == {"mine", "sft"}
    (tmp_path / "dataset_info.json").write_text("{broken")
    with pytest.raises(ExportError, match="not a readable JSON object"):
        merged_dataset_info(e)


def test_axolotl_entry_names_the_reasoning_key_only_when_there_is_one(tmp_path):
    def entry(key, tokenized=False):
        e = Export(tmp_path / "sft.jsonl", "hf", "full", key, tokenized)
        return yaml.safe_load(axolotl_yaml(e))["datasets"][0]

    assert entry("thinking")["field_thinking"] == entry("thinking")["template_thinking_key"]
    assert "field_thinking" not in entry("inline")
    assert entry("inline", tokenized=True) == {"path": str((tmp_path / "sft.jsonl").resolve()),
                                               "ds_type": "json", "type": None}


def observation(stdout: str, truncated: bool = False) -> Observation:
    return Observation(exit_code=0, stdout=stdout, stderr="", duration_s=0.1,
                       truncated=truncated)


def test_the_truncation_marker_names_who_cut():
    assert observation_text(observation("x" * 10), cap=10) == "x" * 10
    by_sandbox = observation_text(observation("52 characters" * 4, truncated=True), cap=100)
    assert by_sandbox.splitlines()[0] == ("[output truncated: the sandbox's output cap kept "
                                          "only the end of the command's output]")
    by_renderer = observation_text(observation("y" * 30), cap=10)
    assert by_renderer == ("[output truncated: the trajectory renderer cut the first 20 "
                           "characters to keep the last 10]\n" + "y" * 10)
    both = observation_text(observation("z" * 30, truncated=True), cap=10)
    assert both.splitlines()[0].count("; then ") == 1
