"""SFT data as trainers load it: shards through Hugging Face ``datasets``, the exported
JSONL through ``datasets`` and the documented row rules of TRL, axolotl and LLaMA-Factory,
and the hf rows through a real transformers chat template with assistant masks.

The dataset is real (candidates run in local sandboxes, rows written as the factory writes them);
the tokenizer is built here with the ``tokenizers`` library (no hub, no torch).
"""

import json
import os
import re
import subprocess
import sys

import pytest

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
MODES = ("masked", "full", "actobs")
SPACES = ("function", "terminal")
CLI = [sys.executable, "-m", "flows.cli"]


@pytest.fixture(scope="module")
def data(sft_data):
    return sft_data


def cli(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300)


def export(data, tmp_path, fmt, mode, space, *extra):
    out = tmp_path / f"{fmt}-{mode}-{space}.jsonl"
    proc = cli("export", "sft", "--format", fmt, "--supervision", mode, "--action-space", space,
               "--out", out, "--data", data, *extra)
    assert proc.returncode == 0, proc.stderr
    return out


def load_json(path):
    from datasets import load_dataset

    return load_dataset("json", data_files=str(path), split="train")


def expected_train(message, mode):
    return message["role"] == "assistant" or (mode == "actobs" and message["role"] == "tool")


def test_trajectory_shards_load_with_datasets(data):
    from datasets import load_dataset

    ds = load_dataset("parquet", data_files=str(data / "trajectories" / "*.parquet"),
                      split="train")
    n_tasks = len(load_dataset("parquet", data_files=str(data / "tasks" / "*.parquet"),
                               split="train"))
    assert len(ds) == 6 * n_tasks
    assert {"messages", "tools", "supervision", "action_space", "task_id", "trajectory_id",
            "reward", "n_turns"} <= set(ds.column_names)
    for row in ds:
        for m in row["messages"]:
            assert m["train"] == expected_train(m, row["supervision"])
            assert m["weight"] == int(m["train"])
        assert isinstance(json.loads(row["tools"]), list)


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("mode", MODES)
def test_hf_rows_follow_trl_and_axolotl_conventions(data, tmp_path, mode, space):
    path = export(data, tmp_path, "hf", mode, space)
    written = [json.loads(line) for line in path.read_text().splitlines()]
    ds = load_json(path)
    assert len(ds) == len(written) > 0
    for row, raw in zip(ds, written, strict=True):
        assert row == raw  # datasets reads back exactly what was written: no null-filled keys
        assert (row["supervision"], row["action_space"]) == (mode, space)
        names = set()
        for tool in raw["tools"]:  # TRL: a list of JSON-schema function definitions
            fn = tool["function"]
            assert tool["type"] == "function" and fn["parameters"]["type"] == "object"
            assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])
            names.add(fn["name"])
        roles = [m["role"] for m in raw["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
        for m in raw["messages"]:
            assert isinstance(m["train"], bool)  # axolotl: message_field_training: train
            assert m["train"] == expected_train(m, mode)
            assert ("weight" in m) == (m["role"] == "assistant")
            assert ("reasoning_content" in m) == (m["role"] == "assistant" and mode != "masked")
            for call in m.get("tool_calls", []):
                assert call["type"] == "function" and call["function"]["name"] in names
                assert isinstance(call["function"]["arguments"], dict)  # TRL: a dict
            if m["role"] == "tool":
                assert m["tool_call_id"].startswith("call_") and m["name"] in names


def test_string_arguments_on_request(data, tmp_path):
    path = export(data, tmp_path, "hf", "masked", "function", "--arguments", "string")
    for line in path.read_text().splitlines():
        for m in json.loads(line)["messages"]:
            for call in m.get("tool_calls", []):
                assert isinstance(json.loads(call["function"]["arguments"]), dict)


TEMPLATE = """{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.train %}{% generation %}{{ _body(m) }}<|end|>{% endgeneration %}
{%- else %}{{ _body(m) }}<|end|>{% endif %}
{%- endfor -%}"""
BODY = """{%- macro _body(m) -%}
{%- if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{{ m.content }}
{%- for c in m.tool_calls or [] %}<call>{{ c.function.name }}
{{- c.function.arguments | tojson }}</call>{% endfor -%}
{%- endmacro -%}"""


def tokenizer():
    """A byte-level tokenizer (every byte a token, no merges) with a chat template that
    marks trained messages with {% generation %}, as TRL's assistant_only_loss reads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<|end|>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|end|>",
                                   chat_template=BODY + TEMPLATE)


@pytest.mark.parametrize("mode", MODES)
def test_chat_template_masks_match_the_per_message_flags(data, tmp_path, mode):
    tok = tokenizer()
    for space in SPACES:
        ds = load_json(export(data, tmp_path, "hf", mode, space))
        for row in ds:
            out = tok.apply_chat_template(row["messages"], tools=row["tools"], tokenize=True,
                                          return_dict=True, return_assistant_tokens_mask=True)
            ids, mask = out["input_ids"], out["assistant_masks"]
            trained = tok.decode([i for i, keep in zip(ids, mask, strict=True) if keep])
            want = "".join(tok.apply_chat_template([m], tokenize=False).split("|>", 1)[1]
                           for m in row["messages"] if m["train"])
            assert trained == want
            text = tok.decode(ids)
            for m in row["messages"]:
                body = m["content"]
                if m["role"] == "tool" and body:
                    assert (body in trained) == (mode == "actobs")
                if m["role"] == "assistant":
                    assert ("<think>" in text) == (mode != "masked")
                if m["role"] == "user":
                    assert body not in trained


THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("mode", ["masked", "full"])
def test_sharegpt_rows_follow_llama_factory_rules(data, tmp_path, mode, space):
    path = export(data, tmp_path, "sharegpt", mode, space)
    ds = load_json(path)
    assert len(ds) > 0
    for row in ds:
        turns = row["conversations"]
        assert isinstance(row["system"], str) and row["system"]
        tool_names = {t["function"]["name"] for t in json.loads(row["tools"])}
        for i, turn in enumerate(turns, start=1):  # human/observation odd, gpt/function_call even
            assert turn["from"] in (("human", "observation") if i % 2 else ("gpt",
                                                                            "function_call"))
            if turn["from"] == "function_call":
                thought = THINK.search(turn["value"])
                assert (thought is not None) == (mode == "full")
                call = json.loads(THINK.sub("", turn["value"]))
                assert set(call) == {"name", "arguments"} and call["name"] in tool_names
                assert isinstance(call["arguments"], dict)
        assert turns[0]["from"] == "human" and turns[-1]["from"] == "gpt"


def test_actobs_is_refused_for_sharegpt_and_bad_input_is_one_line(data, tmp_path):
    cases = [
        (["--format", "sharegpt", "--supervision", "actobs", "--out", tmp_path / "a.jsonl"],
         "cannot mark"),
        (["--supervision", "observations", "--out", tmp_path / "b.jsonl"], "invalid choice"),
        (["--out", tmp_path / "c.jsonl", "--data", tmp_path / "missing"], "no dataset at"),
        (["--out", tmp_path / "no" / "such" / "dir" / "d.jsonl"], "cannot write --out"),
        (["--out", tmp_path], "is a folder"),
        (["--format", "openai", "--supervision", "actobs", "--out", tmp_path / "e.jsonl"],
         "assistant messages only"),
        (["--format", "openai", "--arguments", "object", "--out", tmp_path / "f.jsonl"],
         "JSON strings only"),
        (["--format", "sharegpt", "--arguments", "string", "--out", tmp_path / "g.jsonl"],
         "does not apply"),
        (["--format", "openai", "--reasoning-key", "thinking", "--out", tmp_path / "h.jsonl"],
         "is an hf key"),
        (["--format", "sharegpt", "--tokenizer", tmp_path, "--out", tmp_path / "i.jsonl"],
         "use --format hf"),
        (["--tokenizer", tmp_path / "none", "--out", tmp_path / "j.jsonl"],
         "no tokenizer_config.json"),
    ]
    for args, needle in cases:
        argv = ["export", "sft", *args]
        if "--data" not in args:
            argv += ["--data", data]
        proc = cli(*argv)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("taskfactory: error:") and needle in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-written


def test_grounding_audit_does_not_depend_on_the_order_rows_are_read(data):
    """The audit streams trajectories and pairs each terminal view with the function view
    of its task and mode as they arrive: reversed rows give the same figures, and terminal
    views without their function views count as trajectories that are not grounded."""
    import duckdb
    import pyarrow.compute as pc

    from tasks.dataset.query import connect
    from tasks.dataset.report.instructions import instruction_stats

    con = connect(data)
    tasks = con.sql("select * from tasks").to_arrow_table()
    rows = con.sql("select * from trajectories").to_arrow_table()

    def audits(trajectories):
        other = duckdb.connect()
        other.register("tasks", tasks)
        other.register("trajectories", trajectories)
        other.register("attempts", con.sql("select * from attempts").to_arrow_table())
        return {a.ecosystem: (a.trajectories, a.grounded)
                for a in instruction_stats(other).ecosystems}

    expected = audits(rows)
    assert expected and all(n == ok == 6 * t for (n, ok), t in zip(
        expected.values(), (a.tasks for a in instruction_stats(con).ecosystems), strict=True))
    assert audits(rows.take(list(reversed(range(rows.num_rows))))) == expected
    terminal = rows.filter(pc.equal(rows["action_space"], "terminal"))
    assert audits(terminal) == {eco: (n // 2, 0) for eco, (n, _) in expected.items()}


def test_stats_reports_diversity_and_audits_without_prefect(data):
    proc = cli("stats", "--data", data, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    import duckdb

    con = duckdb.connect()
    n, distinct = con.execute(
        f"select count(*), count(distinct instruction) from read_parquet("
        f"'{data}/tasks/*.parquet')").fetchone()
    assert (stats["tasks"], stats["distinct"]) == (n, distinct)
    assert sum(o["count"] for o in stats["openings"]) <= n
    for eco in stats["ecosystems"]:
        assert eco["preserved"] == eco["tasks"]
        assert eco["grounded"] == eco["trajectories"] == 6 * eco["tasks"]
    text = cli("stats", "--data", data)
    assert "largest share of one template phrasing" in text.stdout
    code = ("import sys; from flows.cli import main; main(['stats','--data',sys.argv[1]]); "
            "print(sorted(m for m in ('prefect','docker') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True,
                          text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"
