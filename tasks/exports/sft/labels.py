"""Pre-tokenized rows: ``input_ids``, ``attention_mask`` and ``labels`` from a local Hugging
Face tokenizer's chat template, with the supervision mode's mask applied token by token.

Each message's characters in the rendered conversation are found by rendering growing
prefixes of the conversation: message *i* spans from the end of the rendering of messages
``[:i]`` to the end of the rendering of ``[:i+1]`` — for an assistant message, from the end
of ``[:i]`` rendered with the generation prompt, so the role header the model never emits
is not trained.  A token is labelled with its id when its first character lies in a message
whose ``train`` flag is set, else ``-100`` (ignored by the loss).  A template that renders
earlier messages differently once later ones follow (not prefix-preserving) cannot be split
this way and is refused with :class:`ExportError`.

``transformers`` is imported only here, only when ``--tokenizer`` is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tasks.exports.sft import ExportError

IGNORE = -100
_PROBE = "reasoning-probe-7f3a"


def load_tokenizer(path: Path) -> Any:
    """The tokenizer saved in folder ``path`` (no download); raises :class:`ExportError` when
    it is missing, unreadable or has no chat template."""
    if not (path / "tokenizer_config.json").is_file():
        raise ExportError(f"--tokenizer {path}: no tokenizer_config.json there; give a folder "
                          "written by save_pretrained (a local copy of the model's tokenizer)")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # no "PyTorch not found"
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ExportError("--tokenizer needs the transformers package; install it with "
                          "pip install 'taskfactory[sft]'") from None
    try:
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExportError(f"--tokenizer {path}: cannot load it ({first}); give a folder "
                          "written by save_pretrained") from None
    if not tok.chat_template:
        raise ExportError(f"--tokenizer {path} has no chat template; save one with the "
                          "tokenizer (tokenizer.chat_template = ...; save_pretrained)")
    return tok


def renders_reasoning(tok: Any, key: str) -> bool:
    """Whether the tokenizer's chat template renders reasoning stored under ``key`` (always
    true for ``inline``, which is part of the content)."""
    if key == "inline":
        return True
    messages = [{"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", key: _PROBE}]
    return _PROBE in tok.apply_chat_template(messages, tokenize=False)


def message_spans(tok: Any, messages: list[dict], tools: list[dict]) -> tuple[str, list]:
    """The rendered conversation and each message's ``(start, end)`` characters in it."""
    def render(upto: int, prompt: bool = False) -> str:
        if upto == 0:
            return ""
        return tok.apply_chat_template(messages[:upto], tools=tools, tokenize=False,
                                       add_generation_prompt=prompt)

    full = render(len(messages))
    spans, start = [], 0
    for i, m in enumerate(messages):
        upto = render(i + 1)
        end = len(upto)
        if not full.startswith(upto):
            raise ExportError(f"the chat template renders message {i} ({m['role']}) "
                              "differently once later messages follow (it is not "
                              "prefix-preserving), so its tokens cannot be told apart; use a "
                              "template that renders each message alike whatever follows")
        if m["role"] == "assistant" and i:
            header = render(i, prompt=True)
            if full.startswith(header) and start <= len(header) <= end:
                start = len(header)
        spans.append((start, end))
        start = end
    return full, spans


def tokenized(tok: Any, messages: list[dict], tools: list[dict]) -> dict:
    """``input_ids``, ``attention_mask`` and ``labels`` of one conversation; messages carry
    their ``train`` flag."""
    text, spans = message_spans(tok, messages, tools)
    trained = bytearray(len(text) + 1)
    for m, (start, end) in zip(messages, spans, strict=True):
        if m["train"]:
            trained[start:end] = b"\x01" * (end - start)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    labels = [i if trained[s] else IGNORE
              for i, (s, _) in zip(ids, enc["offset_mapping"], strict=True)]
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}
