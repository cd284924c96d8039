"""Optional LLM paraphrase of a template instruction, kept only if nothing is lost.

The rewritten text must pass the same preservation check as the template (every required
literal as a whole code span, the answer format's wording) and add no code span of its
own (the gate's literal shortcut ran on the template's literals); otherwise the reply is
counted as rejected on the client and the template instruction stands.  LLM trouble of
any kind (unreachable, budget spent, malformed reply) also keeps the template: the
paraphrase is never required.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from pydantic import BaseModel, Field

from schemas.records import LLM_SUFFIX
from tasks.core.llm import LLMClient, LLMError
from tasks.instruct.instruction import Instruction
from tasks.instruct.preserve import Required, missing_literals
from tasks.rules.markdown import code_spans

log = logging.getLogger(__name__)
PURPOSE = "paraphrase"

SYSTEM_PROMPT = """\
You rewrite task instructions for a command-line agent so that they do not all read
alike. Keep the meaning exactly: every requirement, every output, every order and format
rule. Keep every Markdown code span (text in backticks) character for character and still
in backticks; add no new values and no hints about which commands to use. Reply with the
rewritten instruction in the field "instruction"."""


class Paraphrase(BaseModel, extra="forbid"):
    instruction: str = Field(min_length=1, max_length=20000)


def build_messages(instruction: Instruction, required: Required) -> list[dict]:
    literals = "\n".join(f"- `{s}`" for s in required.spans)
    wording = "".join(f"\nKeep the words: {p!r}." for p in required.phrases)
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Instruction:\n\n{instruction.text}\n"
                                        f"Literals that must stay as code spans:\n{literals}"
                                        f"{wording}"}]


def paraphrase_instruction(client: LLMClient, instruction: Instruction,
                           required: Required) -> Instruction:
    """The paraphrased instruction when it keeps everything ``required``, else the input.

    A kept paraphrase's ``template_id`` is ``<template id it rewrote>+llm:<model>``."""
    try:
        reply = client.complete_json(build_messages(instruction, required), Paraphrase,
                                     purpose=PURPOSE)
    except LLMError as exc:
        log.info("llm paraphrase unavailable: %s", exc)
        return instruction
    text = reply.instruction.strip() + "\n"
    missing = missing_literals(text, required)
    added = sorted(set(code_spans(text)) - set(code_spans(instruction.text)))
    if missing or added:
        client.record_rejected(PURPOSE)
        log.info("llm paraphrase rejected: it %s", f"lacks {', '.join(missing[:3])}" if missing
                 else f"adds {', '.join(added[:3])}")
        return instruction
    return replace(instruction, text=text,
                   template_id=f"{instruction.template_id}{LLM_SUFFIX}{client.config.model}")
