"""NumPy's arranging functions of array records inside tape.jit, as the Python recorder writes them
(tape/arrays/methods.py): np.broadcast_to, np.tile and np.repeat add -0.0 to a view with axes of length 1 where
elements repeat, broadcast along them (one add record, the Python recorder's spread; its reverse sums them back);
np.diagonal, np.diag of a matrix and np.trace read a view whose step is the two axes' added (no record); np.tril,
np.triu and np.diag of a vector select by NumPy's mask (np.tri, np.eye) from the record, zeros elsewhere; np.tensordot
over a constant count of axes is NumPy's transposes, reshapes to matrices and one matmul. np.tile of more than two
axes, np.repeat of four (the spread view would need more than DIMS axes), repeats given as an array and tensordot's
axes as lists (write tuples) fail typing: scalar records. An empty result raises Unfit (the call is recorded as scalar
records), as an empty slice does.
"""

from __future__ import annotations

import numpy as np
from numba import literal_unroll
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled.array_overloads import is_data, is_record, normalized, view
from tape.compiled.array_records import Unfit
from tape.compiled.array_rows import DIMS
from tape.compiled.array_views import PERMUTED, RESHAPED
from tape.compiled.numba_internals import types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import jit


def _ints(typ):
    """Whether typ is an int or a tuple of them."""
    return isinstance(typ, types.Integer) or isinstance(typ, types.BaseTuple) and all(
        isinstance(t, types.Integer) for t in typ.types)


def _spreader(ndim: int):
    """(a, lengths, strides, counts, shape) -> a's view of ``lengths`` and ``strides`` (arrays of ndim; 1 along the axes
    it repeats on) plus -0.0 of shape ``counts``: one add record, tape/records/array_records.py's spread (steps of 0
    along axes of length 1, as there); NumPy's ValueError for a negative length in ``shape``, the result's, and Unfit
    for an empty one."""
    @jit
    def spread(a, lengths, strides, counts, shape):
        size = 1
        for n in shape:
            if n < 0:
                raise ValueError("negative dimensions are not allowed (tape.jit: an array record's repeats)")
            size *= n
        if size == 0:
            raise Unfit("an empty copy of an array record")
        for d in range(ndim):
            if lengths[d] == 1:
                strides[d] = 0
        viewed = view(a, 0, to_fixed_tuple(lengths, ndim), to_fixed_tuple(strides, ndim))
        return viewed + np.full(to_fixed_tuple(counts, ndim), -0.0)
    return spread


SPREAD = [_spreader(ndim) for ndim in range(1, DIMS + 1)]


def _lengths(x):
    """x (an int or a tuple of ints) as an int64 array."""


@overload(_lengths)
def _lengths_typer(x):
    if isinstance(x, types.Integer):
        return lambda x: np.full(1, x, np.int64)
    if isinstance(x, types.BaseTuple):
        count = len(x)

        def unrolled(x):
            out, k = np.empty(count, np.int64), 0
            for n in literal_unroll(x):
                out[k], k = n, k + 1
            return out
        return unrolled
    return None


def broadcast_to_typer(array, shape):
    """np.broadcast_to of an array record to a shape of up to DIMS axes: its view with axes of length 1 where it is
    broadcast, spread along them (NumPy's ValueError where it cannot be)."""
    if not is_record(array) or not _ints(shape):
        return None
    out = len(shape) if isinstance(shape, types.BaseTuple) else 1
    if not array.ndim <= out <= DIMS:
        return None
    spread, pad = SPREAD[out - 1], out - array.ndim

    def broadcast(array, shape):
        want = _lengths(shape)
        lengths, strides, counts = np.ones(out, np.int64), np.zeros(out, np.int64), np.ones(out, np.int64)
        for d in range(pad, out):
            lengths[d], strides[d] = array.shape[d - pad], array.strides[d - pad]
            if lengths[d] != 1 and lengths[d] != want[d]:
                raise ValueError("operands could not be broadcast together with remapped shapes (tape.jit: "
                                 "np.broadcast_to of an array record)")
        for d in range(out):
            if lengths[d] == 1:
                counts[d] = want[d]
        return spread(array, lengths, strides, counts, want)
    return broadcast


def tile_typer(A, reps):
    """np.tile of an array record of one or two axes by reps of one or two: its view of lengths (1, n0, 1, n1), spread
    by (r0, 1, r1, 1) and reshaped to (r0 * n0, r1 * n1), as NumPy's (a promoted with 1s, reps with 1s, to one
    length)."""
    if not is_record(A) or not _ints(reps):
        return None
    nd = max(A.ndim, len(reps) if isinstance(reps, types.BaseTuple) else 1)
    if nd > DIMS // 2:
        return None
    spread, reshaped, pad = SPREAD[2 * nd - 1], RESHAPED[nd - 1], nd - A.ndim

    def tile(A, reps):
        given = _lengths(reps)
        lengths, strides = np.ones(2 * nd, np.int64), np.zeros(2 * nd, np.int64)
        counts, shape = np.ones(2 * nd, np.int64), np.empty(nd, np.int64)
        for d in range(nd):
            r = given[d - (nd - len(given))] if d >= nd - len(given) else 1
            n = A.shape[d - pad] if d >= pad else 1
            lengths[2 * d + 1], counts[2 * d], shape[d] = n, r, r * n
            strides[2 * d + 1] = A.strides[d - pad] if d >= pad else 0
        return reshaped(spread(A, lengths, strides, counts, shape), shape)
    return tile


def repeat_typer(a, repeats, axis=None):
    """np.repeat of an array record by an int, along an int axis or of the flattened record: its view with an axis of
    length 1 after that axis (after the last, flattened), spread along it, reshaped."""
    if not is_record(a) or not isinstance(repeats, types.Integer) or a.ndim >= DIMS:
        return None
    every = axis is None or isinstance(axis, (types.NoneType, types.Omitted))
    if not every and not isinstance(axis, types.Integer):
        return None
    ndim, out = a.ndim, 1 if every else a.ndim
    spread, reshaped = SPREAD[ndim], RESHAPED[out - 1]

    def repeat(a, repeats, axis=None):
        if repeats < 0:
            raise ValueError("repeats may not contain negative values (tape.jit: np.repeat of an array record)")
        k = ndim - 1 if every else normalized(axis, ndim)
        lengths, strides, counts = np.ones(ndim + 1, np.int64), np.zeros(ndim + 1, np.int64), np.ones(ndim + 1,
                                                                                                      np.int64)
        shape = np.empty(out, np.int64)
        for d in range(ndim):
            e = d + (d > k)
            lengths[e], strides[e] = a.shape[d], a.strides[d]
        counts[k + 1] = repeats
        if every:
            shape[0] = repeats * lengths[:ndim + 1].prod()
        else:
            for d in range(ndim):
                shape[d] = a.shape[d] * (repeats if d == k else 1)
        return reshaped(spread(a, lengths, strides, counts, shape), shape)
    return repeat


@jit
def _diagonal(a, offset):
    """The view of a 2-d record's diagonal ``offset`` (its steps added), as tape/arrays/methods.py's diagonal."""
    (m, n), k = a.shape, offset
    length = min(m, n - k) if k >= 0 else min(m + k, n)
    if length <= 0:
        raise Unfit("an empty diagonal of an array record")
    return view(a, k * a.strides[1] if k >= 0 else -k * a.strides[0], (length,), (a.strides[0] + a.strides[1],))


def _of(a, ndims, k) -> bool:
    """An array record of one of ``ndims`` axes, and an int (or the default) as ``k``."""
    return is_record(a) and a.ndim in ndims and isinstance(k, (types.Integer, types.Omitted, int))


def diagonal_typer(a, offset=0):
    """np.diagonal of a 2-d array record (an int offset): a view."""
    return (lambda a, offset=0: _diagonal(a, offset)) if _of(a, (2,), offset) else None


def trace_typer(a, offset=0):
    """np.trace of a 2-d array record: its diagonal's sum."""
    return (lambda a, offset=0: _diagonal(a, offset).sum()) if _of(a, (2,), offset) else None


def diag_typer(v, k=0):
    """np.diag: of a 2-d record its diagonal k, of a 1-d record the square of zeros with it on diagonal k (a select by
    np.eye's mask of it padded by zeros, as a column for k >= 0, else a row), as tape/arrays/methods.py's diag."""
    if not _of(v, (1, 2), k):
        return None
    if v.ndim == 2:
        return lambda v, k=0: _diagonal(v, k)

    def diag(v, k=0):
        n = v.shape[0] + abs(k)
        mask = np.eye(n, n, k, np.bool_)
        if k == 0:
            return np.where(mask, v.reshape(n, 1), 0.0)
        padded = np.concatenate((v, np.zeros(abs(k))))
        return np.where(mask, padded.reshape(1, n) if k < 0 else padded.reshape(n, 1), 0.0)
    return diag


@jit
def _tri(m, n, k):
    """NumPy's np.tri(m, n, k, dtype=bool): True on and below diagonal k."""
    mask = np.empty((m, n), np.bool_)
    for i in range(m):
        for j in range(n):
            mask[i, j] = j <= i + k
    return mask


def _triangle(lower: bool):
    def typer(m, k=0):
        """np.tril or np.triu of an array record of two axes or more: a select by np.tri's mask (its complement)."""
        if not _of(m, (2, 3, 4), k):
            return None
        if lower:
            return lambda m, k=0: np.where(_tri(m.shape[-2], m.shape[-1], k), m, 0.0)
        return lambda m, k=0: np.where(~_tri(m.shape[-2], m.shape[-1], k - 1), m, 0.0)
    return typer


def tensordot_typer(a, b, axes=2):
    """np.tensordot of array records and NumPy arrays over a constant count of axes (an int constant, or a pair of
    ints or of tuples of ints; lists, whose length Numba's type may not hold, are refused): tape/arrays/methods.py's
    tensordot (transposes, reshapes to matrices, one matmul)."""
    count = _count(axes)
    if not (is_record(a) or is_record(b)) or not all(is_record(o) or is_data(o) for o in (a, b)) or count is None:
        return None
    na, nb = a.ndim, b.ndim
    out = na + nb - 2 * count
    if count > min(na, nb) or not 0 <= out <= DIMS or max(na, nb) > DIMS:
        return None
    matrix_a, matrix_b = MATRIX[na, is_record(a)], MATRIX[nb, is_record(b)]
    shaped = RESHAPED[out - 1] if out else _element

    def tensordot(a, b, axes=2):
        left, right = _contracted(na, nb, axes, count)
        inner = 1
        for i in range(count):
            if a.shape[left[i]] != b.shape[right[i]]:
                raise ValueError("shape-mismatch for sum")
            inner *= a.shape[left[i]]
        order_a, order_b = _others(na, left), _others(nb, right)
        lengths = np.empty(max(out, 1), np.int64)
        for d in range(na - count):
            lengths[d] = a.shape[order_a[d]]
        for d in range(nb - count):
            lengths[na - count + d] = b.shape[order_b[d]]
        rows, cols = lengths[:na - count].prod(), lengths[na - count:out].prod()
        product = matrix_a(a, np.concatenate((order_a, left)), rows, inner) @ matrix_b(
            b, np.concatenate((right, order_b)), inner, cols)
        return shaped(product, lengths)
    return tensordot


def _count(typ):
    """The count of axes np.tensordot's ``axes`` contracts, where its type says it (None: not)."""
    if isinstance(typ, (types.Omitted, types.IntegerLiteral)) or isinstance(typ, int):
        value = typ.value if isinstance(typ, types.Omitted) else getattr(typ, "literal_value", typ)
        return value if isinstance(value, int) and value >= 0 else None
    if isinstance(typ, types.BaseTuple) and len(typ) == 2:
        counts = {1 if isinstance(t, types.Integer) else len(t) if isinstance(t, types.UniTuple) and isinstance(
            t.dtype, types.Integer) else -1 for t in typ.types}
        return counts.pop() if len(counts) == 1 and -1 not in counts else None
    return None


def _contracted(na, nb, axes, count):
    """(a's axes, b's axes) np.tensordot contracts, arrays of ``count`` (NumPy's AxisError out of bounds)."""


@overload(_contracted)
def _contracted_typer(na, nb, axes, count):
    if isinstance(axes, types.BaseTuple):
        return lambda na, nb, axes, count: (_normalized(_lengths(axes[0]), na), _normalized(_lengths(axes[1]), nb))
    return lambda na, nb, axes, count: (np.arange(na - count, na), np.arange(count))


@jit
def _normalized(axes, ndim):
    """np.tensordot's axes of one side as an array (NumPy's AxisError out of bounds)."""
    out = np.empty(len(axes), np.int64)
    for k in range(len(axes)):
        out[k] = normalized(axes[k], ndim)
    return out


@jit
def _others(ndim, taken):
    """The axes of ndim not in ``taken``, in order."""
    keep = np.ones(ndim, np.bool_)
    keep[taken] = False
    return np.flatnonzero(keep)


def _matrixer(ndim: int, record: bool):
    """(x, order, rows, cols) -> x of ndim axes transposed to ``order`` and reshaped to a matrix (a record: views, or a
    gather where NumPy copies; a NumPy array: a copy)."""
    permuted, reshaped = PERMUTED[ndim - 1], RESHAPED[1]

    @jit
    def of_record(x, order, rows, cols):
        return reshaped(permuted(x, order), np.array([rows, cols]))

    @jit
    def of_data(x, order, rows, cols):
        return np.ascontiguousarray(np.transpose(x, to_fixed_tuple(order, ndim))).reshape((rows, cols))
    return of_record if record else of_data


MATRIX = {(ndim, record): _matrixer(ndim, record) for ndim in range(1, DIMS + 1) for record in (False, True)}


@jit
def _element(product, lengths):
    """The one element of a 1 x 1 product (a contraction of every axis)."""
    return product[0, 0]


def _register() -> None:
    overload(np.broadcast_to)(broadcast_to_typer)
    overload(np.tile)(tile_typer)
    overload(np.repeat)(repeat_typer)
    overload(np.diagonal)(diagonal_typer)
    overload(np.trace)(trace_typer)
    overload(np.diag)(diag_typer)
    overload(np.tril)(_triangle(lower=True))
    overload(np.triu)(_triangle(lower=False))
    overload(np.tensordot, prefer_literal=True)(tensordot_typer)


_register()
