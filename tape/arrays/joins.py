"""numpy.concatenate and numpy.stack of VarArrays: one join record (a copy into slices) where a piece is an array
record or the result is large, else the scalar records themselves, joined as NumPy joins their indices.

VarArray's table of NumPy functions (tape/arrays/varray.py) takes them from here.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from tape.arrays.operands import as_view, common_tape, operands, shape_of
from tape.arrays.varray import _FUNCTIONS, VarArray, array_operands, wrap_view
from tape.kernels.ops import CONSTANT
from tape.records import array_records
from tape.sweeps.driver import View


def _join(arrays, axis: int, join, name: str) -> VarArray:
    """Join records along an axis: one join record where a piece is an array record or the result is
    large, else the scalar records themselves (numbers and arrays as constant records)."""
    arrays = tuple(arrays)
    found = array_operands(arrays) if name == "concatenate" else None
    if found is not None and all(type(p) is View for p in found[1]):  # array records only: as below
        return wrap_view(found[0], array_records.join(found[0], found[1], axis))
    parts = operands(*arrays)
    t = None if parts is None else common_tape(parts)
    if parts is None or t is None:
        raise TypeError(f"tape.{name} joins VarArrays of one tape, and numbers or NumPy arrays")
    if any(isinstance(p, View) for _, p in parts) or sum(np.size(p) for _, p in parts) >= array_records.small():
        if name == "stack":  # a new axis of length 1 on each piece, then joined along it
            shapes = {shape_of(p) for _, p in parts}
            if len(shapes) != 1:
                raise ValueError(f"all input arrays must have the same shape to stack, got {sorted(shapes)}")
            where = normalize_axis_index(axis, len(next(iter(shapes))) + 1)
            return _join([np.expand_dims(a, where) if not isinstance(a, VarArray)
                          else a.reshape(a.shape[:where] + (1,) + a.shape[where:]) for a in arrays], where,
                         np.concatenate, "concatenate")
        views = [as_view(t, rt is not None, p) for rt, p in parts]
        return wrap_view(t, array_records.join(t, views, axis))
    pieces = [VarArray(t._segment(), t._append_block(CONSTANT, p.size, values=p.ravel()).reshape(p.shape))
              if rt is None else a for (rt, p), a in zip(parts, arrays, strict=True)]
    rows = operands(*(a._scalars() if isinstance(a, VarArray) else a for a in pieces))  # array records: elems
    assert rows is not None
    return VarArray(t._segment(), join([r for _, r in rows], axis=axis))


def concatenate(arrays, axis: int = 0) -> VarArray:
    """Join VarArrays of one tape (and numbers) along an existing axis (records nothing for scalar records)."""
    return _join(arrays, axis, np.concatenate, "concatenate")


def stack(arrays, axis: int = 0) -> VarArray:
    """Join VarArrays of one tape (and numbers) along a new axis (records nothing for scalar records)."""
    return _join(arrays, axis, np.stack, "stack")


def hstack(arrays) -> VarArray:
    """numpy.hstack: a join along the second axis (the first of 1-d pieces)."""
    arrays = tuple(arrays)
    return concatenate(arrays, 0 if arrays and np.ndim(arrays[0]) == 1 else 1)


def vstack(arrays) -> VarArray:
    """numpy.vstack: 1-d pieces as rows (each reshaped to 1 x n), joined along the first axis."""
    return concatenate([(a.reshape(1, -1) if isinstance(a, VarArray) else np.reshape(a, (1, -1))) if np.ndim(a) == 1
                        else a for a in arrays], 0)


_FUNCTIONS.update({np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack})
