"""``taskfactory export sft``: trajectory shards -> JSONL that trainers take as it is.

``rows`` shapes each record per target (hf, openai, sharegpt), ``labels`` tokenizes rows with
a local tokenizer's chat template and applies the supervision mask token by token,
``families`` knows what each chat-template family does with reasoning, ``configs`` writes
the trainer configs and README beside the file, and ``export`` streams it all to disk.
Imports neither Prefect nor Docker.
"""

__all__ = ["ExportError", "export", "families", "preference"]


class ExportError(ValueError):
    """Bad export input: the message names the problem and the fix."""
