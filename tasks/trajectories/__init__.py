"""Trajectories: SFT samples rendered from a validated trace.

- ``render``: two action spaces (function calling, terminal) x three supervision masks,
  each grounding-checked (:func:`~tasks.trajectories.render.render_trajectories`);
- ``reasoning``: the reasoning of each assistant turn, from what is visible at that point.

Imports :mod:`tasks.core`, :mod:`tasks.rules` and :mod:`tasks.instruct`.
"""

__all__ = ["reasoning", "render"]
