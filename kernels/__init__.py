"""Numba kernels of `tape`: the op table and the sweeps generated from it."""

from kernels._sweeps import eval_op, forward_sweep, replay, replay_gradient, reverse_sweep
from kernels.ops import LEAF, OPCODE, OPS, Op

__all__ = ["LEAF", "OPCODE", "OPS", "Op", "eval_op", "forward_sweep", "replay", "replay_gradient", "reverse_sweep"]
