"""Execution environments: sandboxes in which task commands run, and the ecosystems.

``sandbox`` (the contract: verbs, lifecycle, errors), ``config`` (the base of every
backend's settings), ``registry`` (backends by name or import path), ``docker/`` and
``local/`` (the two built-in backends), ``runner/`` (the in-container command runner) and
``ecosystems/`` (built-in ecosystems, their loader and their contract).  Importing this
package, a config or the registry never imports the docker SDK.
"""
