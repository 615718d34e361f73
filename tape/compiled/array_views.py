"""Views of array records inside tape.jit (landing 2 of issue 26), as the Python recorder makes them
(tape/records/array_records.py ``index``, ``transpose``, ``reshape``): nothing is recorded but an element read (an elem
record). Ints and slices (negative steps too) of the leading axes; ``.T`` and ``transpose()`` (the axes reversed);
``reshape`` (to one to DIMS axes) and ``ravel`` of a view in C order. An int out of bounds raises NumPy's IndexError, a
slice step of 0 its ValueError, a bad shape its ValueError; an empty slice or a reshape NumPy would copy raise
``Unfit`` (the call is recorded as scalar records). Anything else (an array or a comparison as the index, ``None``,
``...``) fails typing: scalar records.
"""

from __future__ import annotations

import operator

import numpy as np
from numba import literal_unroll
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled import array_joins, array_where  # noqa: F401  # registers np.roll, np.stack, np.pad, np.where
from tape.compiled.array_overloads import _size, is_record
from tape.compiled.array_records import Unfit, element
from tape.compiled.array_rows import DIMS
from tape.compiled.numba_internals import ArrayRecordType, make_array_record, types
from tape.compiled.overload_cache import overload, overload_attribute, overload_method
from tape.compiled.recording import jit


@jit
def _at(k, n):
    """Int index k's place along an axis of n, checked as NumPy checks it."""
    if k < -n or k >= n:
        raise IndexError("index out of bounds for an axis of an array record (tape.jit)")
    return k + n if k < 0 else k


@jit
def _cut(key, n, stride):
    """(offset, length, stride) of slice ``key`` along an axis of n elements ``stride`` apart (range(n)[key])."""
    start, stop, step = key.indices(n)
    count = (stop - start + step - 1) // step if step > 0 else (start - stop - step - 1) // -step
    if count <= 0:
        raise Unfit("an empty slice of an array record (NumPy's view starts at 0 there)")
    return start * stride, count, step * stride


def cut(key, n, stride):
    """(offset, length, stride) of index ``key`` along an axis: an int's length is 1 (the axis is dropped)."""


@overload(cut)
def _cut_typer(key, n, stride):
    if isinstance(key, types.Integer):
        return lambda key, n, stride: (_at(key, n) * stride, 1, 0)
    if isinstance(key, types.SliceType):
        return lambda key, n, stride: _cut(key, n, stride)
    return None


def _keys(key):
    """The index types of ``key`` (one or a tuple), or None where they are not ints and slices."""
    keys = tuple(key.types) if isinstance(key, types.BaseTuple) else (key,)
    return keys if all(isinstance(k, (types.Integer, types.SliceType)) for k in keys) else None


def first(key):
    """The index of the first axis."""


def second(key):
    """The index of the second axis: every element where ``key`` names one axis."""


@overload(first)
def _first(key):
    return (lambda key: key[0]) if isinstance(key, types.BaseTuple) else (lambda key: key)


@overload(second)
def _second(key):
    return (lambda key: key[1]) if isinstance(key, types.BaseTuple) and len(key) == 2 else (
        lambda key: slice(None, None, None))


@jit
def _view(a, start, shape, strides):
    return make_array_record(a.tape, a.arrays, a.record, a.offset, a.start + start, shape, strides, a.life)


@jit
def _picked(a, key):
    """(offset, shape, strides) of a 2-d view indexed by key (an int's length 1, stride 0)."""
    d0, n0, s0 = cut(first(key), a.shape[0], a.strides[0])
    d1, n1, s1 = cut(second(key), a.shape[1], a.strides[1])
    return d0 + d1, (n0, n1), (s0, s1)


def getitem_typer(a, key):
    keys = _keys(key) if is_record(a) else None
    if keys is None or len(keys) > a.ndim:
        return None
    ints = [isinstance(k, types.Integer) for k in keys] + [False] * (a.ndim - len(keys))
    if a.ndim == 1 and ints[0]:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + cut(first(key), a.shape[0],
                                                                                            a.strides[0])[0])
    if a.ndim == 1:
        def sliced(a, key):
            d, n, s = cut(first(key), a.shape[0], a.strides[0])
            return _view(a, d, (n,), (s,))
        return sliced
    kept = [d for d in range(a.ndim) if not ints[d]]
    if a.ndim > 2:
        return _of_many(a, len(kept))
    if not kept:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + _picked(a, key)[0])
    if len(kept) == 2:
        return lambda a, key: _view(a, *_picked(a, key))
    d = kept[0]

    def line(a, key):
        at, shape, strides = _picked(a, key)
        return _view(a, at, (shape[d],), (strides[d],))
    return line


def _of_many(a, ndim: int):
    """getitem of a record of 3 or more axes by ints and slices: a view of ndim axes (an element where none)."""
    if not ndim:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + _cuts(a, key, 0)[0])

    def picked(a, key):
        start, lengths, strides = _cuts(a, key, ndim)
        return _view(a, start, to_fixed_tuple(lengths, ndim), to_fixed_tuple(strides, ndim))
    return picked


@jit
def _cuts(a, key, ndim):
    """(offset, lengths, strides) of the view of a by ``key`` (ints and slices of its leading axes) of ndim axes: as
    NumPy indexes (an int drops its axis; the axes after the key's whole)."""
    start, d, j = 0, 0, 0
    lengths, strides = np.empty(ndim, np.int64), np.empty(ndim, np.int64)
    for k in literal_unroll(keyed(key)):
        at, n, step = cut(k, a.shape[d], a.strides[d])
        start, d = start + at, d + 1
        if not is_int(k):
            lengths[j], strides[j], j = n, step, j + 1
    for e in range(d, len(a.shape)):
        lengths[j], strides[j], j = a.shape[e], a.strides[e], j + 1
    return start, lengths, strides


def keyed(key):
    """``key`` as a tuple of indices."""


overload(keyed)(lambda key: (lambda key: key) if isinstance(key, types.BaseTuple) else (lambda key: (key,)))


def is_int(key):
    """Whether index ``key`` is an int (its axis dropped), a constant."""


overload(is_int)(lambda key: (lambda key: True) if isinstance(key, types.Integer) else (lambda key: False))


def _transposed(a):
    """.T and transpose(): the axes reversed."""
    if a.ndim == 1:
        return lambda a: a
    return lambda a: make_array_record(a.tape, a.arrays, a.record, a.offset, a.start, a.shape[::-1], a.strides[::-1],
                                       a.life)


@jit
def _c_order(shape, strides):
    """Whether a view of ``shape`` and ``strides`` is in C order (NumPy's test: axes of length 1 aside)."""
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] != 1 and strides[d] != step:
            return False
        step *= shape[d]
    return True


@jit
def _lengths(size, n0, n1):
    """NumPy's shape (n0, n1) for reshaping ``size`` elements to it (one length may be -1; n0 1 for a 1-d one)."""
    if n0 == -1 and n1 > 0:
        n0 = size // n1
    elif n1 == -1 and n0 > 0:
        n1 = size // n0
    if n0 < 0 or n1 < 0 or n0 * n1 != size:
        raise ValueError("cannot reshape an array record into that shape (tape.jit: its size differs)")
    return n0, n1


def pair(shape):
    """reshape's arguments (a tuple of one or two lengths, or of one tuple of them) as (n0, n1), n0 1 for one."""


@overload(pair)
def _pair(shape):
    inner = isinstance(shape.types[0], types.BaseTuple)
    if len(shape) == 1 and inner:
        return (lambda shape: (1, shape[0][0])) if len(shape.types[0]) == 1 else (
            lambda shape: (shape[0][0], shape[0][1]))
    return (lambda shape: (1, shape[0])) if len(shape) == 1 else (lambda shape: (shape[0], shape[1]))


@jit
def _checked(a, n0, n1):
    """The shape of a reshaped to (n0, n1), where NumPy gives a view."""
    if not _c_order(a.shape, a.strides):
        raise Unfit("a reshape NumPy would copy (a gather record)")
    return _lengths(_size(a), n0, n1)


@jit
def _many(a, shape):
    """The lengths (one may be -1) and strides of a reshaped to ``shape``, a tuple of three or more, where NumPy gives
    a view (its ValueError where the size differs)."""
    if not _c_order(a.shape, a.strides):
        raise Unfit("a reshape NumPy would copy (a gather record)")
    n, strides, known, free = np.empty(len(shape), np.int64), np.empty(len(shape), np.int64), 1, -1
    for d in range(len(shape)):
        n[d] = shape[d]
        if n[d] == -1 and free < 0:
            free = d
        elif n[d] < 0:
            raise ValueError("cannot reshape an array record into that shape (tape.jit: a negative length)")
        else:
            known *= n[d]
    if free >= 0 and known > 0:
        n[free] = _size(a) // known
    if n[free] < 0 or known * (n[free] if free >= 0 else 1) != _size(a):
        raise ValueError("cannot reshape an array record into that shape (tape.jit: its size differs)")
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d], step = step, step * n[d]
    return n, strides


def reshape_typer(a, *shape):
    if not is_record(a) or not shape:
        return None
    lengths = tuple(shape[0].types) if len(shape) == 1 and isinstance(shape[0], types.BaseTuple) else shape
    if not 0 < len(lengths) <= DIMS or not all(isinstance(n, types.Integer) for n in lengths):
        return None
    if len(lengths) > 2:
        ndim = len(lengths)

        def to_many(a, *shape):
            n, strides = _many(a, shape[0] if len(shape) == 1 else shape)
            return _view(a, 0, to_fixed_tuple(n, ndim), to_fixed_tuple(strides, ndim))
        return to_many
    if len(lengths) == 1:
        return lambda a, *shape: _view(a, 0, (_checked(a, *pair(shape))[1],), (1,))

    def to_matrix(a, *shape):
        n0, n1 = _checked(a, *pair(shape))
        return _view(a, 0, (n0, n1), (n1, 1))
    return to_matrix


def _register() -> None:
    overload(operator.getitem)(getitem_typer)
    overload_attribute(ArrayRecordType, "T")(_transposed)
    overload_method(ArrayRecordType, "transpose")(_transposed)
    overload_method(ArrayRecordType, "reshape")(reshape_typer)
    overload_method(ArrayRecordType, "ravel")(lambda a: lambda a: a.reshape(-1))


_register()
