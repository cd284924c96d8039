"""Optional LLM paraphrase of a template instruction, kept only if nothing is lost.

The rewritten text must pass the same preservation check as the template (every required
literal as a whole code span, the answer format's wording), add no code span of its own
(the gate's literal shortcut ran on the template's literals), pass the same readability
limits (:mod:`tasks.rules.readability`) and not show the task's answer; otherwise the
reply is counted as rejected on the client and the template instruction stands.  LLM trouble of
any kind (unreachable, budget spent, malformed reply) also keeps the template: the
paraphrase is never required.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from pydantic import BaseModel, Field

from schemas.records import LLM_SUFFIX
from tasks.core.failures import StageFailure
from tasks.core.llm import LLMClient, LLMError
from tasks.instruct.instruction import Instruction
from tasks.instruct.preserve import Required, missing_literals
from tasks.rules.leaks import leaked_in
from tasks.rules.markdown import code_spans
from tasks.rules.readability import check_readable

log = logging.getLogger(__name__)
PURPOSE = "paraphrase"

SYSTEM_PROMPT = """\
You rewrite task instructions for a command-line agent so that they do not all read
alike and read as a person would write them: short sentences (none over 40 words), one
description per noun phrase, nothing said twice. Keep the meaning exactly: every
requirement, every output, every order and format rule. Keep every Markdown code span
(text in backticks) character for character and still in backticks; add no new values
and no hints about which commands to use. Reply with the rewritten instruction in the
field "instruction"."""


class Paraphrase(BaseModel, extra="forbid"):
    instruction: str = Field(min_length=1, max_length=20000)


def build_messages(instruction: Instruction, required: Required) -> list[dict]:
    literals = "\n".join(f"- `{s}`" for s in required.spans)
    wording = "".join(f"\nKeep the words: {p!r}." for p in required.phrases)
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Instruction:\n\n{instruction.text}\n"
                                        f"Literals that must stay as code spans:\n{literals}"
                                        f"{wording}"}]


@dataclass(frozen=True)
class _Whole:
    """The paraphrase as one line for the leak check (it has no items of its own)."""

    text: str
    target: str = "the paraphrase"


def _flaw(text: str, instruction: Instruction, required: Required,
          answer: str | None) -> str:
    """What disqualifies a paraphrase ('' when nothing does): a required literal lost, a
    code span added, a sentence over the readability limits, or the answer shown."""
    missing = missing_literals(text, required)
    if missing:
        return f"lacks {', '.join(missing[:3])}"
    added = sorted(set(code_spans(text)) - set(code_spans(instruction.text)))
    if added:
        return f"adds {', '.join(added[:3])}"
    try:
        check_readable(text)
    except StageFailure as exc:
        return f"is unreadable: {exc.detail}"
    where = leaked_in(answer, text, [_Whole(text)]) if answer is not None else None
    return f"shows the answer in {where}" if where else ""


def paraphrase_instruction(client: LLMClient, instruction: Instruction,
                           required: Required, answer: str | None = None) -> Instruction:
    """The paraphrased instruction when it keeps everything ``required``, passes the
    readability limits and does not show ``answer`` (the task's, when it has one), else
    the input.  Only the text changes: the verifier and the answer are the task's own.

    A kept paraphrase's ``template_id`` is ``<template id it rewrote>+llm:<model>``."""
    try:
        reply = client.complete_json(build_messages(instruction, required), Paraphrase,
                                     purpose=PURPOSE)
    except LLMError as exc:
        log.info("llm paraphrase unavailable: %s", exc)
        return instruction
    text = reply.instruction.strip() + "\n"
    why = _flaw(text, instruction, required, answer)
    if why:
        client.record_rejected(PURPOSE)
        log.info("llm paraphrase rejected: it %s", why)
        return instruction
    return replace(instruction, text=text,
                   template_id=f"{instruction.template_id}{LLM_SUFFIX}{client.config.model}")
