"""A tiny Hugging Face tokenizer built here (no download): byte-level BPE trained on the fly
on a few lines of text, wrapped in ``PreTrainedTokenizerFast`` and saved to a folder with
a real model family's chat template (``tests/fixtures/sft/templates``)."""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "sft" / "templates"
SPECIAL = {
    "qwen2_5": ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
    "qwen3": ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
    "gptoss": ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|call|>",
               "<|return|>", "<|endoftext|>"],
}
EOS = {"qwen2_5": "<|im_end|>", "qwen3": "<|im_end|>", "gptoss": "<|return|>"}


def save_tokenizer(folder: Path, template: str, corpus: list[str]) -> Path:
    """Train a 600-token byte-level BPE on ``corpus``, attach ``template``'s chat template
    (file stem in ``TEMPLATES``) and its special tokens, save it to ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIAL[template],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS[template],
                                   pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIAL[template],
                                   chat_template=(TEMPLATES / f"{template}.jinja").read_text())
    fast.save_pretrained(str(folder))
    return folder
