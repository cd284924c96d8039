"""The gate: a task is accepted only when its verifier tells the reference solution from
every control.

- ``controls``: the one list of controls the gate and ``check-harbor`` both run, over a
  :class:`~tasks.gate.controls.Host`;
- ``gate``: :func:`~tasks.gate.gate.run_gate` and
  :func:`~tasks.gate.gate.run_reconstruct_gate`, the controls in the candidate's sandbox;
- ``shortcuts``: the cheap tricks a verifier must not reward (nop, empty, partial,
  literals);
- private, one control's solution each: ``open_loop``, ``vandal``, ``near_miss``,
  ``alternative``, ``attacks`` (the hostile control).

Imports every package of ``tasks/`` up to :mod:`tasks.reconstruct`.
"""

__all__ = ["controls", "gate", "shortcuts"]
