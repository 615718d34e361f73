"""Gather records inside tape.jit: np.pad's copying modes ('edge', 'reflect', 'symmetric', 'wrap') of an array record,
as tape/arrays/assign.py's pad writes them, and a view's copy in C order (COPY: a reshape NumPy copies, as
tape/records/array_records.py's reshape writes it). write_moved (array_moved.py) copies their values and keeps the
mode, widths and the flat view's start and stride (a copy's: the view's offset, ndim, lengths and strides) in the
plan row (PADS); its Plan's places are made of them where a Plan is asked for (a pad's kept by assign's ``_padded``:
a loop that pads alike at every step gathers by one index object).
"""

from __future__ import annotations

import numpy as np

from tape.arrays.assign import _padded
from tape.compiled.array_rows import DIMS, INPUTS, PADS
from tape.kernels.array_ops import ARRAY_OPCODE
from tape.records import array_records
from tape.sweeps.driver import View

MODES = ("edge", "reflect", "symmetric", "wrap")
COPY = len(MODES)  # the mode of a view's copy
GATHER = ARRAY_OPCODE["gather"]


def places(r: list[int]) -> np.ndarray:
    """The places of gather plan row r (its input's elements, read-only): np.pad's of its input's shape, a copy's
    those of the view it copies (C order)."""
    if r[PADS] == COPY:
        offset, ndim, lengths, strides = r[PADS + 1], r[PADS + 2], r[PADS + 3:PADS + 3 + DIMS], r[PADS + 3 + DIMS:]
        view = View(0, offset, tuple(lengths[DIMS - ndim:]), tuple(strides[DIMS - ndim:DIMS]))
        copied = array_records.places(view).reshape(-1)
        copied.flags.writeable = False
        return copied
    mode, b0, a0, b1, a1, start, stride = r[PADS:PADS + 7]
    n1 = r[INPUTS - 1] - b1 - a1  # (its lengths: the plan row's last two)
    shape, widths = ((r[INPUTS - 2] - b0 - a0, n1), ((b0, a0), (b1, a1))) if r[3] == 2 else ((n1,), ((b1, a1),))
    return _padded(shape, widths, MODES[mode], start, stride)[0]
