"""Instructions: the text a solver reads, derived from the executed trace.

- ``instruction``: goal, spec or step instructions from the phrase pools
  (``tasks/templates/``), and their :class:`~tasks.instruct.instruction.Item` lines;
- ``describe``: seeded entries named by a description instead of their literal;
- ``preserve``: the literals an instruction must carry, and the check that it does;
- ``paraphrase``: the optional LLM paraphrase, kept only if nothing is lost.

Imports :mod:`tasks.core` and :mod:`tasks.rules`.
"""

__all__ = ["describe", "instruction", "paraphrase", "preserve"]
