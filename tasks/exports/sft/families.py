"""Chat-template families: which reasoning key each one renders, and how LLaMA-Factory marks
a thought inside a ``function_call`` turn.

What a family's template does with reasoning decides whether ``full`` rows train on it at
all: a template that does not read the row's key renders ``full`` exactly like ``masked``.
The table holds what the families' own templates and LLaMA-Factory's ``template.py``
(``register_template(..., thought_words=...)``) do; ``reasoning_warning`` turns it into the
one line the exporter prints.
"""

from __future__ import annotations

from dataclasses import dataclass

REASONING_KEYS = ("reasoning_content", "thinking", "inline")
INLINE_THOUGHT = ("<think>\n", "\n</think>\n\n")


@dataclass(frozen=True)
class Family:
    """``reads``: the message key the family's chat template renders as reasoning (None: it
    renders none, only ``content``); ``llamafactory``: its LLaMA-Factory template name;
    ``thought``: the thought words that template strips from a ``function_call`` turn
    before parsing its JSON (None: it parses the turn as it is, so a thought there breaks
    preprocessing)."""

    reads: str | None
    llamafactory: str
    thought: tuple[str, str] | None = INLINE_THOUGHT


FAMILIES: dict[str, Family] = {
    "qwen3": Family("reasoning_content", "qwen3"),
    "qwen2.5": Family(None, "qwen"),
    "llama3": Family(None, "llama3"),
    "glm4": Family(None, "glm4"),
    "gpt_oss": Family("thinking", "gpt_oss",
                      ("<|channel|>analysis<|message|>",
                       "<|end|><|start|>assistant<|channel|>final<|message|>")),
    "mistral": Family(None, "mistral", None),
}


def reasoning_warning(fmt: str, key: str, family: str | None) -> str | None:
    """The warning for ``--format hf`` rows whose reasoning ``family``'s template drops; None
    when it renders them (or when the family is unknown: nothing to say).  A template that
    reads the other key renders it only where the renderer aliases the two (recent
    ``transformers`` releases do; LLaMA-Factory, vLLM's and older renderers need not)."""
    if fmt != "hf" or key == "inline" or family is None:
        return None
    reads = FAMILIES[family].reads
    if reads == key:
        return None
    if reads is None:
        return (f"warning: the {family} chat template renders no reasoning key, so the "
                "reasoning is never trained; export with --reasoning-key inline")
    return (f"warning: the {family} chat template reads {reads}, not {key}: renderers that do "
            f"not alias the two drop it; export with --reasoning-key {reads}")
