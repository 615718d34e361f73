"""Reshapes in tape.jit as NumPy's: its no-copy rule (reshape_strides, which array records' views follow too,
tape/compiled/array_views.py), and Var arrays not in C order reshaped by it: a view where NumPy gives one, else their
elements copied in C order into the arena (Numba's own reshape refuses such arrays, or raises NotImplementedError)."""

from __future__ import annotations

import numpy as np
from numba.np.unsafe.ndarray import to_fixed_tuple
from numpy.lib.stride_tricks import as_strided

from tape.compiled.arrays import copied
from tape.compiled.numba_internals import TypingError, VarArrayType, make_array, types
from tape.compiled.overload_cache import overload_method
from tape.compiled.recording import jit


@overload_method(VarArrayType, "reshape")
def _reshape(a, shape, columns=None):
    if isinstance(shape, types.BaseTuple) and len(shape) > 2:
        raise TypingError(f"tape.jit: Var arrays are 1-d or 2-d, not reshaped to {len(shape)}-d")
    given = columns is None or isinstance(columns, (types.NoneType, types.Omitted))  # a.reshape(n), a.reshape((n, m))
    if a.layout != "C":  # a transpose's, a slice's: NumPy's rule, not Numba's (it raised NotImplementedError)
        reshaped = RESHAPED[(1 if isinstance(shape, types.Integer) else len(shape)) - 1 if given else 1]
        if given:
            return lambda a, shape, columns=None: reshaped(a, shape)
        return lambda a, shape, columns=None: reshaped(a, (shape, columns))
    if given:
        return lambda a, shape, columns=None: make_array(a.tape, a.rows.reshape(shape), a.vals.reshape(shape))
    return lambda a, shape, columns=None: make_array(a.tape, a.rows.reshape((shape, columns)),  # a.reshape(n, m)
                                                     a.vals.reshape((shape, columns)))


@jit
def c_order(shape, strides):
    """Whether a view of ``shape`` and ``strides`` is in C order (NumPy's test: axes of length 1 aside)."""
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != step:
            return False
        step *= shape[d]
    return True


@jit
def reshape_strides(shape, strides, n):
    """The strides of a view of (shape, strides) reshaped to lengths n, and whether NumPy gives one: C strides where it
    is in C order, else NumPy's _attempt_nocopy_reshape's (its axes of length 1 left out, each run of old axes that
    makes a new one read in C order)."""
    new = np.empty(len(n), np.int64)
    if c_order(shape, strides):
        step = 1
        for d in range(len(n) - 1, -1, -1):
            new[d], step = step, step * n[d]
        return new, True
    old, steps, count = np.empty(len(shape), np.int64), np.empty(len(shape), np.int64), 0
    for d in range(len(shape)):
        if shape[d] != 1:
            old[count], steps[count], count = shape[d], strides[d], count + 1
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(n) and oi < count:
        np_, op = n[ni], old[oi]
        while np_ != op:
            if np_ < op:
                np_, nj = np_ * n[nj], nj + 1
            else:
                op, oj = op * old[oj], oj + 1
        for ok in range(oi, oj - 1):
            if steps[ok] != old[ok + 1] * steps[ok + 1]:
                return new, False
        new[nj - 1] = steps[oj - 1]
        for nk in range(nj - 1, ni, -1):
            new[nk - 1] = new[nk] * n[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = new[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(n)):
        new[nk] = last
    return new, True


def _reshaper(ndim: int):
    """(a Var array not in C order, a shape of ndim axes) -> a reshaped as NumPy does: a view where NumPy gives one
    (reshape_strides), else its elements copied in C order."""

    @jit
    def reshaped(a, shape):
        n = np.empty(a.rows.size, np.bool_).reshape(shape).shape  # NumPy's lengths (a -1 resolved) and ValueError
        step, view = reshape_strides(a.rows.shape, np.array(a.rows.strides) // a.rows.itemsize, n)
        if view:
            strides = to_fixed_tuple(step * a.rows.itemsize, ndim)
            return make_array(a.tape, as_strided(a.rows, shape=n, strides=strides),
                              as_strided(a.vals, shape=n, strides=strides))
        b = copied(a.tape, a.rows, a.vals)  # (in the arena: a Var array owns no memory of its own)
        return make_array(a.tape, b.rows.reshape(n), b.vals.reshape(n))
    return reshaped


RESHAPED = [_reshaper(1), _reshaper(2)]
