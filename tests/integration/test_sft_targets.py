"""Each SFT target checked against what its own project publishes: OpenAI's fine-tuning
request schema (a copy in tests/fixtures/sft), token labels from real model families' chat
templates, Hugging Face ``datasets`` loading, the axolotl and LLaMA-Factory config fields.

The dataset is real (candidates run in local sandboxes); the tokenizers are trained here
with the ``tokenizers`` library (no hub, no torch) and carry the original chat templates
of Qwen2.5, Qwen3 and gpt-oss (tests/fixtures/sft/templates/SOURCES.md).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.exports.sft.labels import renders_reasoning
from tests.support.tiny_tokenizer import save_tokenizer

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
FIXTURES = Path(__file__).parents[1] / "fixtures" / "sft"
SCHEMA = json.loads((FIXTURES / "openai_finetune_chat_schema.json").read_text())
ROLE_SCHEMAS = {"system": "ChatCompletionRequestSystemMessage",
                "user": "ChatCompletionRequestUserMessage",
                "assistant": "FineTuneChatCompletionRequestAssistantMessage",
                "tool": "ChatCompletionRequestToolMessage"}
MODES = ("masked", "full", "actobs")
SPACES = ("function", "terminal")
# axolotl-ai-cloud/axolotl src/axolotl/utils/schemas/datasets.py, class SFTDataset, at
# commit 07e83ab884f5849585a8b6d1856bca62f21bb041: its field names.
AXOLOTL_SFT_FIELDS = {
    "path", "split", "type", "input_transform", "shards", "shards_idx", "preprocess_shards",
    "conversation", "chat_template", "chat_template_jinja", "data_files", "input_format",
    "name", "ds_type", "field", "field_human", "field_model", "field_messages", "field_tools",
    "field_thinking", "template_thinking_key", "message_field_role", "message_field_content",
    "message_property_mappings", "message_field_training", "message_field_training_detail",
    "split_thinking", "logprobs_field", "temperature", "roles_to_train", "train_on_eos",
    "roles", "drop_system_message", "trust_remote_code", "revision"}
# hiyouga/LLaMA-Factory data/README.md at commit 015ff251ec0a8b5ca0aac9a8fb5735aa17f59868.
LLAMAFACTORY_ENTRY = {"hf_hub_url", "ms_hub_url", "script_url", "file_name", "formatting",
                      "ranking", "subset", "folder", "columns", "tags"}
LLAMAFACTORY_COLUMNS = {"prompt", "query", "response", "history", "messages", "system",
                        "tools", "images", "chosen", "rejected", "kto_tag"}
LLAMAFACTORY_TAGS = {"role_tag", "content_tag", "user_tag", "assistant_tag",
                     "observation_tag", "function_tag", "system_tag"}


@pytest.fixture(scope="module")
def data(sft_data):
    return sft_data


def cli(*args):
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def export(data, folder, fmt, mode, space, *extra, name=None):
    out = folder / (name or f"{fmt}-{mode}-{space}-{len(extra)}.jsonl")
    proc = cli("export", "sft", "--format", fmt, "--supervision", mode, "--action-space",
               space, "--out", out, "--data", data, *extra)
    assert proc.returncode == 0, proc.stderr
    return out


def lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def documented(name: str) -> set[str]:
    """The property names a schema definition documents (through ``allOf`` too)."""
    d = SCHEMA["$defs"][name]
    keys = set(d.get("properties", {}))
    for part in d.get("allOf", []):
        keys |= documented(part["$ref"].rsplit("/", 1)[1]) if "$ref" in part \
            else set(part.get("properties", {}))
    return keys


def undocumented_keys(row: dict) -> list[str]:
    bad = [k for k in row if k not in SCHEMA["properties"]]
    call_keys = documented("ChatCompletionMessageToolCall")
    function_keys = set(SCHEMA["$defs"]["ChatCompletionMessageToolCall"]["properties"]
                        ["function"]["properties"])
    for m in row["messages"]:
        bad += [f"{m['role']}.{k}" for k in m if k not in documented(ROLE_SCHEMAS[m["role"]])]
        for c in m.get("tool_calls", []):
            bad += [f"call.{k}" for k in c if k not in call_keys]
            bad += [f"call.function.{k}" for k in c["function"] if k not in function_keys]
    for t in row["tools"]:
        bad += [f"tool.{k}" for k in t if k not in documented("ChatCompletionTool")]
        bad += [f"tool.function.{k}" for k in t["function"] if k not in documented(
            "FunctionObject")]
    return bad


def test_openai_rows_validate_against_the_fine_tuning_schema(data, tmp_path):
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(SCHEMA)
    checked = 0
    for mode in ("masked", "full"):
        for space in SPACES:
            path = export(data, tmp_path, "openai", mode, space)
            rows, hf = lines(path), lines(export(data, tmp_path, "hf", mode, space))
            meta = lines(path.with_name(f"{path.stem}.meta.jsonl"))
            assert [m["row"] for m in meta] == list(range(len(rows))) and rows
            assert [m["trajectory_id"] for m in meta] == [r["trajectory_id"] for r in hf]
            for row, source in zip(rows, hf, strict=True):
                assert [e.message for e in validator.iter_errors(row)] == []
                assert undocumented_keys(row) == []
                assert [m["role"] for m in row["messages"]] == \
                    [m["role"] for m in source["messages"]]
                for m in row["messages"]:
                    assert m["role"] != "assistant" or m["weight"] == 1
                    inline = m.get("content", "").startswith("<think>\n")
                    assert inline == (mode == "full" and m["role"] == "assistant")
                    for call in m.get("tool_calls", []):
                        assert isinstance(json.loads(call["function"]["arguments"]), dict)
            checked += len(rows)
    assert checked >= 36
    # the check can fail: the hf shape (what --format openai used to write) does
    hf_rows = lines(export(data, tmp_path, "hf", "masked", "function"))
    assert all(list(validator.iter_errors(r)) for r in hf_rows)


@pytest.fixture(scope="module")
def tokenizers(data, tmp_path_factory):
    """Folders of tokenizers trained on this dataset's text, one per template."""
    folder = tmp_path_factory.mktemp("tok")
    rows = lines(export(data, folder, "hf", "full", "function"))
    corpus = [json.dumps(r) for r in rows]
    return {t: save_tokenizer(folder / t, t, corpus) for t in ("qwen2_5", "qwen3", "gptoss")}


def load_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def expected_labels(tok, text, messages):
    """Labels from the Qwen2.5 template's own layout, one ``<|im_start|>`` block per message
    (tool results in a ``user`` block): a trained assistant block minus its
    ``<|im_start|>assistant\\n`` header, a trained tool block whole.  Returns the ids, the
    labels and each message's token indices."""
    blocks = ["<|im_start|>" + b for b in text.split("<|im_start|>")[1:]]
    assert text.startswith("<|im_start|>") and len(blocks) == len(messages)
    mask, bounds, at = bytearray(len(text) + 1), [], 0
    for block, m in zip(blocks, messages, strict=True):
        assert block.startswith(f"<|im_start|>{'user' if m['role'] == 'tool' else m['role']}")
        header = len("<|im_start|>assistant\n") if m["role"] == "assistant" else 0
        if m["train"]:
            mask[at + header:at + len(block)] = b"\x01" * (len(block) - header)
        bounds.append((at, at + len(block)))
        at += len(block)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    starts = [s for s, _ in enc["offset_mapping"]]
    labels = [i if mask[s] else -100 for i, s in zip(enc["input_ids"], starts, strict=True)]
    spans = [[k for k, s in enumerate(starts) if lo <= s < hi] for lo, hi in bounds]
    return enc["input_ids"], labels, spans


@pytest.mark.parametrize("mode", MODES)
def test_token_labels_match_the_per_message_flags(data, tmp_path, tokenizers, mode):
    tok = load_tokenizer(tokenizers["qwen2_5"])
    for space in SPACES:
        path = export(data, tmp_path, "hf", mode, space, "--tokenizer", tokenizers["qwen2_5"],
                      "--reasoning-key", "inline")
        source = lines(export(data, tmp_path, "hf", mode, space, "--reasoning-key", "inline"))
        meta = lines(path.with_name(f"{path.stem}.meta.jsonl"))
        assert [m["trajectory_id"] for m in meta] == [r["trajectory_id"] for r in source]
        for row, src in zip(lines(path), source, strict=True):
            assert set(row) == {"input_ids", "attention_mask", "labels"}
            assert row["attention_mask"] == [1] * len(row["input_ids"])
            text = tok.apply_chat_template(src["messages"], tools=src["tools"], tokenize=False)
            ids, labels, spans = expected_labels(tok, text, src["messages"])
            assert row["input_ids"] == ids and row["labels"] == labels  # token by token
            for span, m in zip(spans, src["messages"], strict=True):  # span by span
                trained = [row["labels"][k] != -100 for k in span]
                assert span and any(trained) == m["train"], (m["role"], mode)
                if m["role"] == "tool":
                    assert all(trained) == (mode == "actobs")


def test_qwen3_labels_and_its_non_incremental_masked_rendering(data, tmp_path, tokenizers):
    tok = load_tokenizer(tokenizers["qwen3"])
    path = export(data, tmp_path, "hf", "full", "function", "--tokenizer", tokenizers["qwen3"])
    source = lines(export(data, tmp_path, "hf", "full", "function"))
    for row, src in zip(lines(path), source, strict=True):
        trained = tok.decode([i for i, label in zip(row["input_ids"], row["labels"],
                                                     strict=True) if label != -100])
        for m in src["messages"]:
            if m["role"] == "assistant":
                assert m["reasoning_content"] in trained
            if m["role"] in ("user", "tool"):
                assert m["content"] not in trained
    out = tmp_path / "qwen3-masked.jsonl"
    proc = cli("export", "sft", "--supervision", "masked", "--tokenizer", tokenizers["qwen3"],
               "--out", out, "--data", data)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("taskfactory: error:") and "prefix-preserving" in line
    assert not any(p.name.startswith("qwen3-masked") for p in tmp_path.iterdir())


@pytest.mark.parametrize(("key", "template", "renders", "warns"), [
    ("thinking", "gptoss", True, False), ("inline", "qwen2_5", True, False),
    ("reasoning_content", "qwen3", True, False), ("reasoning_content", "qwen2_5", False, True),
    ("thinking", "qwen2_5", False, True),
    # the installed transformers aliases reasoning_content and thinking; others need not
    ("reasoning_content", "gptoss", True, True)])
def test_reasoning_in_the_rendered_text_of_full_rows(data, tmp_path, tokenizers, key,
                                                     template, renders, warns):
    tok = load_tokenizer(tokenizers[template])
    family = {"gptoss": "gpt_oss", "qwen2_5": "qwen2.5", "qwen3": "qwen3"}[template]
    out = tmp_path / "r.jsonl"
    proc = cli("export", "sft", "--supervision", "full", "--reasoning-key", key,
               "--template-family", family, "--out", out, "--data", data)
    assert proc.returncode == 0, proc.stderr
    warnings = [w for w in proc.stderr.splitlines() if w.startswith("warning:")]
    assert len(warnings) == int(warns)
    for row in lines(out):
        text = tok.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        if template == "gptoss":  # it drops tool-call analysis once a final answer follows
            assistants = assistants[-1:]
        for m in assistants:
            thought = thought_of(m, key)
            assert thought.strip() and (thought in text) == renders
    assert renders_reasoning(tok, key) == renders  # the probe behind the --tokenizer warning


def thought_of(message: dict, key: str) -> str:
    if key != "inline":
        return message[key]
    head, sep, _ = message["content"].partition("\n</think>\n\n")
    assert sep and head.startswith("<think>\n")
    return head.removeprefix("<think>\n")


EXPORTS = [("hf", m, ()) for m in MODES] + [
    ("hf", "full", ("--arguments", "string")), ("hf", "full", ("--reasoning-key", "thinking")),
    ("hf", "actobs", ("--reasoning-key", "inline")), ("openai", "masked", ()),
    ("openai", "full", ()), ("sharegpt", "masked", ()), ("sharegpt", "full", ()),
    ("sharegpt", "full", ("--template-family", "gpt_oss"))]


def test_datasets_loads_every_export_without_null_filled_structs(data, tmp_path, tokenizers):
    import datasets
    from datasets import load_dataset

    assert tuple(int(p) for p in datasets.__version__.split(".")[:2]) >= (4, 7)
    paths = [export(data, tmp_path, fmt, mode, space, *extra, name=f"e{i}-{space}.jsonl")
             for i, (fmt, mode, extra) in enumerate(EXPORTS) for space in SPACES]
    paths.append(export(data, tmp_path, "hf", "actobs", "function", "--tokenizer",
                        tokenizers["qwen2_5"], "--reasoning-key", "inline", name="tok.jsonl"))
    for path in paths:
        written = lines(path)
        loaded = load_dataset("json", data_files=str(path), split="train",
                              cache_dir=str(tmp_path / "cache"))
        assert [dict(r) for r in loaded] == written, path.name
        assert ">= 4.7" in path.with_name(f"{path.stem}.README.md").read_text()


def test_axolotl_yaml_uses_the_fields_axolotl_documents(data, tmp_path, tokenizers):
    cases = [("full", ("--reasoning-key", "thinking"), "thinking"), ("actobs", (), None),
             ("full", ("--reasoning-key", "inline"), None)]
    for mode, extra, thinking in cases:
        out = export(data, tmp_path, "hf", mode, "function", *extra)
        (entry,) = yaml.safe_load(out.with_name(f"{out.stem}.axolotl.yaml").read_text())[
            "datasets"]
        assert set(entry) <= AXOLOTL_SFT_FIELDS
        assert (entry["type"], entry["ds_type"], Path(entry["path"])) == \
            ("chat_template", "json", out.resolve())
        assert entry["roles_to_train"] == [] and entry["train_on_eos"] in ("all", "turn", "last")
        assert entry.get("field_thinking") == entry.get("template_thinking_key") == \
            (thinking or (None if "inline" in extra else "reasoning_content"))
        for row in lines(out):
            assert isinstance(row[entry["field_tools"]], list)  # list[dict], JSON schema
            for m in row[entry["field_messages"]]:
                assert isinstance(m[entry["message_field_training"]], bool)
                if m["role"] == "assistant" and mode != "masked" and thinking:
                    assert m[entry["field_thinking"]]
    out = export(data, tmp_path, "hf", "actobs", "function", "--tokenizer",
                 tokenizers["qwen2_5"], "--reasoning-key", "inline", name="tokenized.jsonl")
    (entry,) = yaml.safe_load((tmp_path / "tokenized.axolotl.yaml").read_text())["datasets"]
    assert set(entry) <= AXOLOTL_SFT_FIELDS and "type" in entry and entry["type"] is None
    assert entry["ds_type"] == "json" and Path(entry["path"]) == out.resolve()
    assert all(set(r) == {"input_ids", "attention_mask", "labels"} for r in lines(out))


def test_llamafactory_entry_uses_the_fields_llamafactory_documents(data, tmp_path):
    (tmp_path / "dataset_info.json").write_text(json.dumps({"mine": {"file_name": "x.json"}}))
    outs = [export(data, tmp_path, "sharegpt", mode, "function", name=f"lf_{mode}.jsonl")
            for mode in ("masked", "full")]
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert set(info) == {"mine", "lf_masked", "lf_full"}  # merged, nothing dropped
    for out in outs:
        entry = info[out.stem]
        assert set(entry) <= LLAMAFACTORY_ENTRY and entry["formatting"] == "sharegpt"
        assert set(entry["columns"]) <= LLAMAFACTORY_COLUMNS
        assert set(entry["tags"]) <= LLAMAFACTORY_TAGS
        assert (tmp_path / entry["file_name"]).resolve() == out.resolve()
        tags, roles = entry["tags"], set()
        for row in lines(out):
            assert isinstance(row[entry["columns"]["system"]], str)
            assert isinstance(json.loads(row[entry["columns"]["tools"]]), list)
            for turn in row[entry["columns"]["messages"]]:
                assert set(turn) == {tags["role_tag"], tags["content_tag"]}
                roles.add(turn[tags["role_tag"]])
        assert roles == {tags[t] for t in ("user_tag", "assistant_tag", "observation_tag",
                                           "function_tag")}
        assert f"dataset: {out.stem}" in (tmp_path / f"{out.stem}.README.md").read_text()
