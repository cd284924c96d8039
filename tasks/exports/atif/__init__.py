"""ATIF, Harbor's Agent Trajectory Interchange Format (RFC 0001): trajectories and rollouts
out as ATIF documents, ATIF documents of other agents in as rollouts.

``models`` holds the format as this project reads and writes it, ``documents`` turns
``trajectories`` and ``rollouts`` rows into documents, ``messages`` turns a document back
into chat messages, ``trials`` lays documents out as Harbor trial folders, ``export``
writes ``taskfactory export atif``; ``sources`` finds documents (and their trials' rewards)
and ``importer`` adds them to ``rollouts`` for ``taskfactory import atif``.
Imports neither Prefect nor Docker.
"""

__all__ = ["AtifError", "export", "importer"]


class AtifError(ValueError):
    """Bad ATIF input or output: the message names the problem and the fix."""
