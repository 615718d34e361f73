"""Numba kernels of `tape`: the op table and the sweeps generated from it (see kernels/_sweeps.py)."""

from kernels._sweeps import *  # noqa: F403 - the generated kernels, listed in its __all__
from kernels._sweeps import __all__ as _KERNELS
from kernels.ops import LEAF, OPCODE, OPS, Op

__all__ = ["LEAF", "OPCODE", "OPS", "Op", *_KERNELS]
