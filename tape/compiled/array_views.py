"""Views of array records inside tape.jit (landing 2 of issue 26), as the Python recorder makes them
(tape/records/array_records.py ``index``, ``transpose``, ``reshape``): nothing is recorded but an element read (an elem
record) and a reshape NumPy copies (one gather record, array_moved._copy). Ints and slices (negative steps too) of the
leading axes; ``.T``, ``transpose`` (the axes reversed or in any order), ``swapaxes``, ``np.moveaxis``; ``reshape``
(to one to DIMS axes) and ``ravel``. An int or axis out of bounds raises NumPy's IndexError or AxisError, a slice step
of 0, a repeated axis or a bad shape its ValueError; an empty slice raises ``Unfit`` (the call is recorded as scalar
records). Anything else (an array or a comparison as the index, ``None``, ``...``) fails typing: scalar records.
"""

from __future__ import annotations

import operator

import numpy as np
from numba import literal_unroll
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled import array_joins, array_where  # noqa: F401  # registers np.roll, np.stack, np.pad, np.where
from tape.compiled.array_gather import COPY
from tape.compiled.array_overloads import _size, is_record, normalized, operand, view
from tape.compiled.array_records import GATHER, LAST, ONES, RESULT, Unfit, element, written
from tape.compiled.array_rows import DIMS
from tape.compiled.numba_internals import ArrayRecordType, types
from tape.compiled.overload_cache import overload, overload_attribute, overload_method
from tape.compiled.recording import jit
from tape.compiled.reshapes import reshape_strides


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
    if isinstance(key, types.NoneType):  # (np.newaxis: an axis of length 1, stride 0, as NumPy's view has it)
        return lambda key, n, stride: (0, 1, 0)
    return None


def _keys(key):
    """The index types of ``key`` (one or a tuple), or None where they are not ints, slices and None."""
    keys = tuple(key.types) if isinstance(key, types.BaseTuple) else (key,)
    return keys if all(isinstance(k, (types.Integer, types.SliceType, types.NoneType)) for k in keys) else None


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
def _picked(a, key):
    """(offset, shape, strides) of a 2-d view indexed by key (an int's length 1, stride 0)."""
    d0, n0, s0 = cut(first(key), a.shape[0], a.strides[0])
    d1, n1, s1 = cut(second(key), a.shape[1], a.strides[1])
    return d0 + d1, (n0, n1), (s0, s1)


def getitem_typer(a, key):
    keys = _keys(key) if is_record(a) else None
    new = sum(isinstance(k, types.NoneType) for k in keys or ())
    if keys is None or len(keys) - new > a.ndim:
        return None
    if new:  # np.newaxis among them: the general form
        ndim = a.ndim - sum(isinstance(k, types.Integer) for k in keys) + new
        return _of_many(a, ndim) if ndim <= DIMS else None
    ints = [isinstance(k, types.Integer) for k in keys] + [False] * (a.ndim - len(keys))
    if a.ndim == 1 and ints[0]:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + cut(first(key), a.shape[0],
                                                                                            a.strides[0])[0])
    if a.ndim == 1:
        def sliced(a, key):
            d, n, s = cut(first(key), a.shape[0], a.strides[0])
            return view(a, d, (n,), (s,))
        return sliced
    kept = [d for d in range(a.ndim) if not ints[d]]
    if a.ndim > 2:
        return _of_many(a, len(kept))
    if not kept:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + _picked(a, key)[0])
    if len(kept) == 2:
        return lambda a, key: view(a, *_picked(a, key))
    d = kept[0]

    def line(a, key):
        at, shape, strides = _picked(a, key)
        return view(a, at, (shape[d],), (strides[d],))
    return line


def _of_many(a, ndim: int):
    """getitem of a record of 3 or more axes by ints and slices (of any axes with None among them): a view of ndim
    axes (an element where none)."""
    if not ndim:
        return lambda a, key: element(a.tape, a.arrays, a.record, a.offset, a.start + _cuts(a, key, 0)[0])

    def picked(a, key):
        start, lengths, strides = _cuts(a, key, ndim)
        return view(a, start, to_fixed_tuple(lengths, ndim), to_fixed_tuple(strides, ndim))
    return picked


@jit
def _cuts(a, key, ndim):
    """(offset, lengths, strides) of the view of a by ``key`` (ints and slices of its leading axes) of ndim axes: as
    NumPy indexes (an int drops its axis; the axes after the key's whole)."""
    start, d, j = 0, 0, 0
    lengths, strides = np.empty(ndim, np.int64), np.empty(ndim, np.int64)
    for k in literal_unroll(keyed(key)):
        if is_none(k):
            lengths[j], strides[j], j = 1, 0, j + 1
        else:
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


def is_none(key):
    """Whether index ``key`` is None (np.newaxis: a new axis of length 1), a constant."""


overload(is_none)(lambda key: (lambda key: True) if isinstance(key, types.NoneType) else (lambda key: False))


def _transposed(a):
    """.T and transpose(): the axes reversed."""
    if a.ndim == 1:
        return lambda a: a
    return lambda a: view(a, 0, a.shape[::-1], a.strides[::-1])


@jit
def _permuted(a, order):
    """The lengths and strides of a's axes in ``order`` (ints: NumPy's AxisError, its ValueError for a repeated axis
    or another count), as tape/records/array_records.py's transpose."""
    ndim = len(a.shape)
    if len(order) != ndim:
        raise ValueError("axes don't match array (tape.jit: an array record's transpose)")
    n, s, seen = np.empty(ndim, np.int64), np.empty(ndim, np.int64), np.zeros(ndim, np.bool_)
    for d in range(ndim):
        k = normalized(order[d], ndim)
        if seen[k]:
            raise ValueError("repeated axis in transpose (tape.jit: an array record's)")
        seen[k], n[d], s[d] = True, a.shape[k], a.strides[k]
    return n, s


def _permuter(ndim: int):
    @jit
    def permuted(a, order):
        n, s = _permuted(a, order)
        return view(a, 0, to_fixed_tuple(n, ndim), to_fixed_tuple(s, ndim))
    return permuted


PERMUTED = [_permuter(ndim) for ndim in range(1, DIMS + 1)]


def _ints(typs) -> bool:
    return all(isinstance(t, types.Integer) for t in typs)


def _unpacked(typs):
    """The types of a typer's star arguments, ints or one tuple of them (Numba types the impl's as one tuple too)."""
    while len(typs) == 1 and isinstance(typs[0], types.BaseTuple):
        typs = tuple(typs[0].types)
    return typs


def transpose_typer(a, *axes):
    """a.transpose(), a.transpose(axes) and a.transpose(*axes): a view of its axes reversed or in that order."""
    order = _unpacked(axes)
    if not is_record(a) or not _ints(order):
        return None
    permuted = PERMUTED[a.ndim - 1]
    if not order:
        return lambda a, *axes: a.T
    return lambda a, *axes: permuted(a, lengths_of(axes))


def np_transpose_typer(a, axes=None):
    if not is_record(a):
        return None
    if axes is None or isinstance(axes, (types.NoneType, types.Omitted)):
        return lambda a, axes=None: a.T
    if not isinstance(axes, types.BaseTuple) or not _ints(axes.types):
        return None
    permuted = PERMUTED[a.ndim - 1]
    return lambda a, axes=None: permuted(a, axes)


@jit
def _swapped(ndim, i, j):
    """The order of axes with i and j exchanged (NumPy's AxisError), as tape/arrays/methods.py's swapaxes."""
    order, i, j = np.arange(ndim), normalized(i, ndim), normalized(j, ndim)
    order[i], order[j] = j, i
    return order


@jit
def _moved(ndim, source, destination):
    """The order of axes with ``source`` moved to ``destination`` (ints; NumPy's AxisError), as methods.moveaxis."""
    order, source, destination, k = np.empty(ndim, np.int64), normalized(source, ndim), normalized(destination,
                                                                                                  ndim), 0
    for place in range(ndim):
        k += k == source and place != destination
        order[place] = source if place == destination else k
        k += place != destination
    return order


def swapaxes_typer(a, axis1, axis2):
    if not is_record(a) or not _ints((axis1, axis2)):
        return None
    permuted = PERMUTED[a.ndim - 1]
    return lambda a, axis1, axis2: permuted(a, _swapped(a.ndim, axis1, axis2))


def moveaxis_typer(a, source, destination):
    if not is_record(a) or not _ints((source, destination)):
        return None
    permuted = PERMUTED[a.ndim - 1]
    return lambda a, source, destination: permuted(a, _moved(a.ndim, source, destination))


@jit
def _sizes(a, shape):
    """NumPy's lengths (one may be -1) for reshaping a to ``shape``, a tuple of ints (its ValueError where the size
    differs)."""
    n, known, free = np.empty(len(shape), np.int64), 1, -1
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
    return n


def _copier(ndim: int):
    """(a, shape of ndim ints) -> a's elements in C order copied by one gather record (array_gather.COPY), of that
    shape (a's size), as tape/records/array_records.py's gather of a view's places."""
    make = RESULT[ndim]

    @jit
    def copied(a, shape):
        b = (0, 0, 0, 0, 0, 0, ndim, COPY) + (ONES + shape)[LAST:]
        return make(a.tape, a.arrays, written(a.tape, a.arrays, GATHER, 0, 0.0, operand(a.tape, a.arrays, a), b))
    return copied


COPIED = [_copier(ndim) for ndim in range(1, DIMS + 1)]


def _reshaper(ndim: int):
    """(a, lengths n) -> a reshaped to ndim axes: a view where NumPy gives one, else its elements in C order copied
    (COPIED), as tape/records/array_records.py's reshape."""
    copied = COPIED[ndim - 1]

    @jit
    def reshaped(a, n):
        strides, fits = reshape_strides(a.shape, a.strides, n)
        if fits:
            return view(a, 0, to_fixed_tuple(n, ndim), to_fixed_tuple(strides, ndim))
        return copied(a, to_fixed_tuple(n, ndim))
    return reshaped


RESHAPED = [_reshaper(ndim) for ndim in range(1, DIMS + 1)]


def lengths_of(shape):
    """reshape's arguments (ints, or one tuple of them) as a tuple of ints."""


@overload(lengths_of)
def _lengths_of(shape):
    if len(shape) == 1 and isinstance(shape[0], types.BaseTuple):
        return lambda shape: shape[0]
    return lambda shape: shape


def reshape_typer(a, *shape):
    lengths = _unpacked(shape)
    if not is_record(a) or not 0 < len(lengths) <= DIMS or not _ints(lengths):
        return None
    reshaped = RESHAPED[len(lengths) - 1]
    return lambda a, *shape: reshaped(a, _sizes(a, lengths_of(shape)))


def flip_typer(m, axis=None):
    """np.flip of an array record along an int axis or all: a view with those axes' steps reversed, as
    tape/arrays/methods.py's flip (a slice ::-1 of each)."""
    if not is_record(m) or not (isinstance(axis, (types.Integer, types.NoneType, types.Omitted)) or axis is None):
        return None
    every = not isinstance(axis, types.Integer)
    return lambda m, axis=None: _flipped(m, -1 if every else normalized(axis, m.ndim))


@jit
def _flipped(a, k):
    """a with axis k's order reversed (every axis for -1)."""
    start, strides = 0, a.strides
    for d in range(len(a.shape)):
        if k < 0 or d == k:
            start += (a.shape[d] - 1) * a.strides[d]
            strides = tuple_setitem(strides, d, -a.strides[d])
    return view(a, start, a.shape, strides)


def expand_dims_typer(a, axis):
    """np.expand_dims of an array record at an int axis: its reshape with an axis of length 1 there (array_joins's,
    as tape/arrays/methods.py's expand_dims)."""
    if not is_record(a) or not isinstance(axis, types.Integer) or a.ndim >= DIMS:
        return None
    expanded = array_joins.EXPANDED[a.ndim]
    return lambda a, axis: expanded(a, normalized(axis, a.ndim + 1))


def _register() -> None:
    overload(operator.getitem)(getitem_typer)
    overload(np.flip)(flip_typer)
    overload(np.expand_dims)(expand_dims_typer)
    overload_attribute(ArrayRecordType, "T")(_transposed)
    overload_method(ArrayRecordType, "transpose")(transpose_typer)
    overload(np.transpose)(np_transpose_typer)
    overload(np.swapaxes)(swapaxes_typer)
    overload_method(ArrayRecordType, "swapaxes")(swapaxes_typer)
    overload(np.moveaxis)(moveaxis_typer)
    overload_method(ArrayRecordType, "reshape")(reshape_typer)
    overload_method(ArrayRecordType, "ravel")(lambda a: lambda a: a.reshape(-1))


_register()
