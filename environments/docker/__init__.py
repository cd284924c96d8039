"""The docker backend: one hardened container per sandbox.

``config`` (settings; no docker SDK import), ``backend`` (the Sandbox and its provider),
``runner_channel`` (the in-container runner, seen from the host), ``exec_path`` (one
``docker exec`` per command, and the archive calls), ``images`` (ecosystem images),
``mounts`` (the in-memory places a container may write) and ``faults`` (which engine
errors are infrastructure failures).
"""
