"""np.pad's copying modes ('edge', 'reflect', 'symmetric', 'wrap') of an array record inside tape.jit: one gather
record, as tape/arrays/assign.py's pad writes it. write_moved (array_records.py) copies its values and keeps the mode,
widths and the flat view's start and stride in its plan row (PADS); its Plan's places are that module's ``_padded``
of them (kept: a loop that pads alike at every step gathers by one index object), made where a Plan is asked for.
"""

from __future__ import annotations

import numpy as np

from tape.arrays.assign import _padded
from tape.compiled.array_rows import INPUTS, PADS
from tape.kernels.array_ops import ARRAY_OPCODE

MODES = ("edge", "reflect", "symmetric", "wrap")
GATHER = ARRAY_OPCODE["gather"]


def places(r: list[int]) -> np.ndarray:
    """The places of gather plan row r (its flat input's elements, read-only): np.pad's of its input's shape."""
    mode, b0, a0, b1, a1, start, stride = r[PADS:PADS + 7]
    n1 = r[INPUTS - 1] - b1 - a1  # (its lengths: the plan row's last two)
    shape, widths = ((r[INPUTS - 2] - b0 - a0, n1), ((b0, a0), (b1, a1))) if r[3] == 2 else ((n1,), ((b1, a1),))
    return _padded(shape, widths, MODES[mode], start, stride)[0]
