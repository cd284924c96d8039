"""What the dataset is exported as, one package per format; each reads the dataset
(:mod:`tasks.dataset`) and never the pipeline.

- ``harbor``: Harbor task folders (``export harbor``, ``check-harbor``);
- ``sft``: trainer-ready JSONL (``export sft``, ``export preference``);
- ``atif``: ATIF documents out and in (``export atif``, ``import atif``).
"""

__all__ = ["atif", "harbor", "sft"]
