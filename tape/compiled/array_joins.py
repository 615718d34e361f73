"""np.concatenate, np.stack, np.roll and np.pad of array records inside tape.jit, as the Python recorder writes them
(tape/records/array_records.py ``join``, tape/arrays/joins.py ``stack``, tape/arrays/methods.py ``roll``,
tape/arrays/assign.py ``pad``): join records of views (NumPy arrays among them recorded as constants; a stack joins
views with a new axis of length 1; a roll is two slices joined; a constant pad joins constant slabs on either side,
axis by axis) and, for np.pad's copying modes of one or two axes, one gather record (array_gather.py). Anything else
(a tuple of shifts, a pad width of another form, a copying pad of 3 or more axes, a stack of 4) fails typing: scalar
records.
"""

from __future__ import annotations

import numpy as np
from numba import literal_unroll
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled.array_gather import MODES
from tape.compiled.array_overloads import is_data, is_record, normalized, operand, view
from tape.compiled.array_records import (
    GATHER,
    JOIN,
    OL,
    OS,
    RESULT,
    ZEROS,
    data,
    whole,
    written,
    written3,
)
from tape.compiled.array_rows import DIMS
from tape.compiled.numba_internals import types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import jit


def _given(axis) -> bool:
    return not (axis is None or isinstance(axis, (types.NoneType, types.Omitted)))


def roll_typer(a, shift, axis=None):
    """np.roll by an int along an axis (or of the flattened record, shaped back): the two slices joined (none: a whole
    turn), as tape/arrays/methods.py's roll."""
    if not is_record(a) or not isinstance(shift, types.Integer) or _given(axis) and not isinstance(axis, types.Integer):
        return None
    if _given(axis):
        return lambda a, shift, axis=None: _rolled(a, shift, normalized(axis, a.ndim))

    def flattened(a, shift, axis=None):
        flat = a.reshape(-1)  # (a gather record where NumPy copies, even for a whole turn: the Python recorder's)
        return a if shift % flat.shape[0] == 0 else _rolled(flat, shift, 0).reshape(a.shape)
    return flattened


@jit
def _along(a, k, lo, hi):
    """The view a[..., lo:hi, ...] of axis k (a slice: no record)."""
    return view(a, lo * a.strides[k], tuple_setitem(a.shape, k, hi - lo), a.strides)


@jit
def _rolled(a, shift, k):
    """a rolled by shift along axis k: its two slices joined (a itself for a whole turn)."""
    n = a.shape[k]
    cut = n - shift % n
    return a if cut == n else np.concatenate((_along(a, k, cut, n), _along(a, k, 0, cut)), k)


def _expander(ndim: int):
    """(an array record of ndim axes, where) -> it with an axis of length 1 at ``where``: its reshape, a view strided
    as NumPy's reshape makes it (the Python recorder's stack reshapes each piece so)."""
    out = ndim + 1  # (a constant of the closure: to_fixed_tuple's length)

    @jit
    def expanded(a, where):
        n = np.ones(out, np.int64)
        for d in range(ndim):
            n[d + (d >= where)] = a.shape[d]
        return a.reshape(to_fixed_tuple(n, out))
    return expanded


EXPANDED = [None, *map(_expander, range(1, DIMS))]  # by ndim


def _kinds(arrays) -> tuple:
    """The types of a join's pieces (a list's or a uniform tuple's one type; none where it is no list or tuple)."""
    if isinstance(arrays, (types.List, types.UniTuple)):
        return (arrays.dtype,)
    return tuple(arrays.types) if isinstance(arrays, types.Tuple) else ()


def first_record(arrays) -> int | None:
    """Where the first array record of a join's pieces (a list or tuple of records; a tuple may mix NumPy arrays in)
    is, or None where they are something else (no record, numbers): a join tape.jit does not type."""
    kinds = _kinds(arrays)
    if not all(is_record(t) or is_data(t) for t in kinds):
        return None
    return next((i for i, t in enumerate(kinds) if is_record(t)), None)


def piece(p, q, a, where):
    """A join's piece as an operand (a NumPy array recorded as a constant); a stack's (``where`` an int) with a new
    axis of length 1 there."""


@overload(piece)
def _piece(p, q, a, where):
    if isinstance(where, (types.NoneType, types.Omitted)):
        return lambda p, q, a, where: operand(p, q, a)
    if is_data(a):
        return lambda p, q, a, where: operand(p, q, np.expand_dims(a, where))
    expanded = EXPANDED[a.ndim] if a.ndim < DIMS else None
    return None if expanded is None else lambda p, q, a, where: operand(p, q, expanded(a, where))


def operands_of(p, q, arrays, where):
    """A join's pieces as operands, in order (its NumPy arrays recorded as constants before any join record, as the
    Python recorder's join records them)."""


@overload(operands_of)
def _operands_of(p, q, arrays, where):
    if isinstance(arrays, (types.List, types.UniTuple)):
        return lambda p, q, arrays, where: [piece(p, q, a, where) for a in arrays]

    def mixed(p, q, arrays, where):
        out = [piece(p, q, arrays[0], where)]
        for a in literal_unroll(arrays[1:]):
            out.append(piece(p, q, a, where))
        return out
    return mixed


@jit
def chained(p, q, pieces, k, ndim):
    """The join records of operands ``pieces`` (two or more) along axis k: of two or three (chained past three), as
    tape/records/array_records.py's join; the last one's (record, offset, lengths)."""
    three = len(pieces) > 2
    r = written3(p, q, JOIN, k + 256 * (2 + three), 0.0, pieces[0], pieces[1], pieces[2] if three else pieces[1])
    at = 2 + three
    while at < len(pieces):
        three = at + 1 < len(pieces)
        e = pieces[at + 1] if three else pieces[at]
        r = written3(p, q, JOIN, k + 256 * (2 + three), 0.0, whole(r[0], r[1], ndim, r[2]), pieces[at], e)
        at += 2
    return r


def _joiner(arrays, stack: bool):
    """The typer's body of np.concatenate (stack False) or np.stack of ``arrays``, or None where tape.jit does not
    type it (then scalar records)."""
    first = first_record(arrays)
    ndim = 0 if first is None else _kinds(arrays)[first].ndim
    if first is None or stack and ndim >= DIMS:
        return None
    out = ndim + stack
    make, single = RESULT[out], EXPANDED[ndim] if stack else _itself

    def joined(arrays, axis=0):
        k = normalized(axis, out)
        if len(arrays) == 0:
            raise ValueError("need at least one array to " + ("stack" if stack else "concatenate"))
        p, q = arrays[first].tape, arrays[first].arrays
        pieces = operands_of(p, q, arrays, k if stack else None)  # (of other shapes: the join's ValueError)
        if len(pieces) == 1:  # (a record itself; stacked, a view of it: no record, as the Python recorder's)
            return single(arrays[first], k)
        return make(p, q, chained(p, q, pieces, k, out))
    return joined


@jit
def _itself(a, k):
    return a


def concatenate_typer(arrays, axis=0):
    """np.concatenate of a list or tuple of array records of one ndim, and NumPy arrays: join records of two or three
    (chained past three), as tape/records/array_records.py's join; of one record, that one."""
    return _joiner(arrays, False)


def stack_typer(arrays, axis=0):
    """np.stack of array records of one ndim (at most DIMS - 1 axes), and NumPy arrays: each with a new axis of length 1
    (a record's reshape, an array's np.expand_dims), joined along it."""
    return _joiner(arrays, True)


def _ndim_of(arrays) -> int:
    """The ndim of a join's pieces where every piece has one (0 where they differ or are not a join's)."""
    ndims = {t.ndim for t in _kinds(arrays)}
    return ndims.pop() if first_record(arrays) is not None and len(ndims) == 1 else 0


def hstack_typer(tup):
    """np.hstack of array records (and NumPy arrays) of one ndim: a join along the second axis (the first of 1-d
    ones), as tape/arrays/joins.py's hstack."""
    ndim = _ndim_of(tup)
    return None if not ndim else lambda tup: np.concatenate(tup, 0 if ndim == 1 else 1)


def vstack_typer(tup):
    """np.vstack of array records (and NumPy arrays) of one ndim: 1-d ones stacked as rows, others joined along the
    first axis, as tape/arrays/joins.py's vstack."""
    ndim = _ndim_of(tup)
    return None if not ndim else (lambda tup: np.stack(tup, 0)) if ndim == 1 else lambda tup: np.concatenate(tup, 0)


def pairs(x, array):
    """A pad width or value as np.broadcast_to(x, (array.ndim, 2)), an array (an int or number, a pair, a tuple of
    one pair or of a pair per axis)."""


@overload(pairs)
def _pairs(x, array):
    nd = array.ndim
    if isinstance(x, types.Omitted):  # (constant_values left out: its default)
        c = float(x.value)
        return lambda x, array: np.full((nd, 2), c)
    if isinstance(x, (types.Integer, types.Float)):
        return lambda x, array: np.full((nd, 2), x)
    if not isinstance(x, types.UniTuple):
        return None
    if isinstance(x.dtype, (types.Integer, types.Float)):  # one number, or (before, after), for every axis
        dtype = np.int64 if isinstance(x.dtype, types.Integer) else np.float64

        def each(x, array):
            out = np.empty((nd, 2), dtype)
            out[:, 0], out[:, 1] = x[0], x[-1]
            return out
        return each if len(x) <= 2 else None
    if not isinstance(x.dtype, types.UniTuple) or len(x.dtype) not in (1, 2) or len(x) not in (1, nd):
        return None
    dtype = np.int64 if isinstance(x.dtype.dtype, types.Integer) else np.float64

    def rows(x, array):  # one pair for every axis, or a pair per axis
        out = np.empty((nd, 2), dtype)
        for d in range(nd):
            out[d, 0], out[d, 1] = x[d % len(x)][0], x[d % len(x)][-1]
        return out
    return rows


def slab(v, axis, n, c):
    """A constant record of v's shape but n along axis, every element c (np.full, recorded as the Python recorder's
    constants)."""


@overload(slab)
def _slab(v, axis, n, c):
    make = RESULT[v.ndim]

    def impl(v, axis, n, c):
        o = data(v.tape, v.arrays, np.full(tuple_setitem(v.shape, axis, n), float(c)))
        return make(v.tape, v.arrays, (o[0], o[1], o[OL:OS]))
    return impl


@jit
def _constant(array, widths, values):
    """np.pad's 'constant' mode: axis by axis, v between its slabs (one join record; none where both are empty)."""
    v = array
    for d in range(array.ndim):
        before, after = widths[d, 0], widths[d, 1]
        if before and after:
            low = slab(v, d, before, values[d, 0])
            v = np.concatenate((low, v, slab(v, d, after, values[d, 1])), d)
        elif before:
            v = np.concatenate((slab(v, d, before, values[d, 0]), v), d)
        elif after:
            v = np.concatenate((v, slab(v, d, after, values[d, 1])), d)
    return v


def pad_typer(array, pad_width, mode="constant", constant_values=0.0):
    """np.pad of an array record: 'constant' (numbers) joins constant slabs axis by axis (tape/records/
    array_records.py's pad: each axis's slabs span the earlier axes' pads); 'edge', 'reflect', 'symmetric' and
    'wrap' gather (array_gather.py; one or two axes)."""
    if not is_record(array) or not isinstance(mode, (str, types.UnicodeType, types.StringLiteral, types.Omitted)) or \
            not _integral(pad_width):
        return None
    if isinstance(mode, (str, types.Omitted)) or getattr(mode, "literal_value", None) == "constant":
        return lambda array, pad_width, mode="constant", constant_values=0.0: _constant(
            array, _widths(pad_width, array), pairs(constant_values, array))
    if array.ndim > 2:  # (a copying mode of 3 or more axes: scalar records)
        return None

    def pad(array, pad_width, mode="constant", constant_values=0.0):
        widths, values = _widths(pad_width, array), pairs(constant_values, array)
        if mode != "constant":
            return gathered(array, widths, mode)
        return _constant(array, widths, values)
    return pad


def _integral(typ) -> bool:
    """Whether a pad width's type is ints (NumPy refuses others: scalar records, whose tape.jit refuses np.pad)."""
    tuples = (types.UniTuple, types.Tuple)
    return isinstance(typ, types.Integer) or isinstance(typ, tuples) and all(map(_integral, typ.types))


@jit
def _widths(pad_width, array):
    """The pad widths as pairs, checked as NumPy checks them."""
    widths = pairs(pad_width, array)
    for d in range(array.ndim):
        if widths[d, 0] < 0 or widths[d, 1] < 0:
            raise ValueError("index can't contain negative values")
    return widths


def gathered(array, widths, mode):
    """np.pad's copying modes: one gather record (array_gather.py)."""


@jit
def _mode(mode):
    for m in range(len(MODES)):
        if mode == MODES[m]:
            return m
    raise ValueError("np.pad of an array record: the mode is not supported (tape.jit has 'constant' with numbers, "
                     "'edge', 'reflect', 'symmetric', 'wrap')")


@overload(gathered)
def _gathered(array, widths, mode):
    make = RESULT[array.ndim]
    if array.ndim == 1:
        return lambda array, widths, mode: make(array.tape, array.arrays, written(
            array.tape, array.arrays, GATHER, 0, 0.0, operand(array.tape, array.arrays, array),
            (0, 0, widths[0, 0], widths[0, 1], 1, array.shape[0], 1, _mode(mode)) + ZEROS))

    def impl(array, widths, mode):
        m = _mode(mode)
        flat = array.reshape(-1)  # (a view in C order, else a gather record copying it, as the Python recorder's)
        b = (widths[0, 0], widths[0, 1], widths[1, 0], widths[1, 1], array.shape[0], array.shape[1], 2, m) + ZEROS
        return make(array.tape, array.arrays, written(array.tape, array.arrays, GATHER, 0, 0.0,
                                                     operand(array.tape, array.arrays, flat), b))
    return impl


def _register() -> None:
    overload(np.roll)(roll_typer)
    overload(np.concatenate)(concatenate_typer)
    overload(np.stack)(stack_typer)
    overload(np.hstack)(hstack_typer)
    overload(np.vstack)(vstack_typer)
    overload(np.pad)(pad_typer)


_register()
