"""Verifiers: checks derived from the probe delta, rendered as one standalone script.

- ``verifier``: :func:`~tasks.verify.verifier.derive_checks`, the rendered scripts (build
  and reconstruct) and :func:`~tasks.verify.verifier.run_verifier`;
- ``comparisons``: the compare modes and entry digests — stdlib only, embedded in every
  verifier;
- ``seal`` (private): how a verifier keeps its reward from the agent, embedded likewise.

Imports only :mod:`tasks.core` of ``tasks/``.
"""

__all__ = ["comparisons", "verifier"]
