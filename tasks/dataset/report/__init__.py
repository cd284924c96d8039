"""Reports on a dataset: ``taskfactory stats`` and the dataset card.

- ``stats``: the report, built from independent sections;
- ``instructions``: instruction diversity and audit figures;
- ``card``: ``<data>/README.md`` with Hugging Face YAML and PNG plots;
- private, sections of the report: ``compositions`` (purposeless compositions),
  ``readability`` (sentence length, nesting, repetition of the instructions),
  ``rollouts`` (how attempts ended, difficulty).
"""

__all__ = ["card", "instructions", "stats"]
