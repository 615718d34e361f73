"""VarArray's methods and NumPy functions made of its other operations, so they need no rule of their own.

Shape functions are views (reshape, transpose, slicing, an array record's diagonal: nothing recorded); roll is one
join record (or a gather); tile, repeat and broadcast_to are one record (of an array record its view broadcast by
adding -0.0; scalar records a gather); triu, tril and diag of a vector are a select by a constant mask (as NumPy's);
tensordot is a matmul (as NumPy's); var, std, norm, outer, trace and diff are arithmetic and reductions; max and min
are one array record each.

The methods are declared on VarArray (tape/arrays/varray.py), each calling the function here
of the same name with the array first. Records are never changed after they are made, so
``flatten()`` may share the records of the array it flattens; ``copy()`` is a new VarArray
of the same records.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.arrays import linalg
from tape.arrays.einsum import FUNCTIONS as EINSUM
from tape.records import array_records
from tape.sweeps.plans import MAX_DIMS

if TYPE_CHECKING:
    from tape.arrays.varray import VarArray


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def swapaxes(x: VarArray, a: int, b: int) -> VarArray:
    """The view with axes a and b exchanged."""
    axes = list(range(x.ndim))
    a, b = _axis(a, x.ndim), _axis(b, x.ndim)
    axes[a], axes[b] = axes[b], axes[a]
    return x.transpose(*axes)


def squeeze(x: VarArray, axis: int | tuple[int, ...] | None = None) -> VarArray:
    """The view without the size-1 axes (those of ``axis``, which must have size 1)."""
    picked = range(x.ndim) if axis is None else [_axis(a, x.ndim) for a in np.atleast_1d(axis).tolist()]
    if axis is not None and any(x.shape[a] != 1 for a in picked):
        raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one: {axis}")
    drop = {a for a in picked if x.shape[a] == 1}
    return x.reshape(tuple(n for k, n in enumerate(x.shape) if k not in drop))


def mean(x: VarArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """The sum over axes times 1/n."""
    return x.sum(axis, keepdims) * _inverse(_count(x, axis), "Mean of empty slice")


def var(x: VarArray, axis: int | tuple[int, ...] | None = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """mean((x - mean(x))**2) over axes, divided by n - ddof instead of n, as numpy.var."""
    n = _count(x, axis)
    d = x - x.sum(axis, keepdims=True) * _inverse(n, None)
    return (d * d).sum(axis, keepdims) * _inverse(max(n - ddof, 0), "Degrees of freedom <= 0 for slice")


def _inverse(n: int, warning: str | None) -> float:
    """1/n, and for n = 0 NumPy's answer: its RuntimeWarning and a division by zero (inf, so the
    empty sum gives NaN and a positive sum of squares inf, as in NumPy), never a ZeroDivisionError."""
    if n > 0:
        return 1.0 / n
    if warning is not None:
        warnings.warn(warning, RuntimeWarning, stacklevel=4)
    return math.inf


def std(x: VarArray, axis: int | tuple[int, ...] | None = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """sqrt(var): at a spread of 0 its slope is 0 (0 times sqrt'(0) adds nothing; JAX gives NaN)."""
    return var(x, axis, ddof, keepdims) ** 0.5


def item(x: VarArray) -> float:
    """The value of a one-element array as a Python float, read on purpose (see VarArray.tolist)."""
    if x.size != 1:
        raise ValueError(f"can only convert an array of size 1 to a Python float, not of size {x.size}")
    return float(x._numbers().reshape(-1)[0])


def _axes(axis: int | tuple[int, ...] | None, ndim: int) -> list[int]:
    return list(range(ndim)) if axis is None else [_axis(k, ndim) for k in np.atleast_1d(axis).tolist()]


def _count(a: VarArray, axis: int | tuple[int, ...] | None) -> int:
    """How many elements a reduction over axis takes together."""
    return math.prod(a.shape[k] for k in _axes(axis, a.ndim))


def _places(a: Any) -> np.ndarray:
    """Each element's flat place in a, in a's shape: NumPy's shape functions applied to it say
    which elements a gather reads."""
    return np.arange(int(np.prod(a.shape))).reshape(a.shape)


def _gathered(a: Any, places: np.ndarray) -> Any:
    """The elements of a at flat places (C order; an index array of any shape): one gather record, of an array
    record's region through a's view (tape.jit's: a copy of a view with steps of 0 where elements repeat)."""
    v = a._view
    if v is None:
        return a.reshape(-1)[places]
    t = a._live_tape()
    return type(a)(t._segment(), None, array_records.gather(t, v.record, array_records.places(v).reshape(-1)[places]))


def roll(a: Any, shift: int, axis: int | None = None) -> Any:
    """numpy.roll: elements shifted along axis (the flattened array for None). One whole shift along one axis is two
    slices joined (one join record: Burgers by np.roll, 4,096 x 200, afresh 69 -> 52 CPU-ms); other shifts a gather."""
    flat = a.reshape(-1) if axis is None else a
    if isinstance(shift, (int, np.integer)) and (axis is None or isinstance(axis, (int, np.integer))):
        axis = _axis(0 if axis is None else int(axis), flat.ndim)
        n, head = flat.shape[axis], (slice(None),) * axis
        cut = n - int(shift) % n if n else 0
        parts = [flat[(*head, slice(cut, None))], flat[(*head, slice(0, cut))]] if 0 < cut < n else None
        return a.copy() if parts is None else np.concatenate(parts, axis).reshape(a.shape)
    return _gathered(a, np.roll(_places(a), shift, axis))


def _spread(a: Any, axes: list[int], counts: list[int], shape: tuple[int, ...], places: Callable[[], Any]) -> Any:
    """The copy of a's view with axes of length 1 where ``axes`` says -1 (a's axes, in order, elsewhere) repeated
    counts times along each axis, reshaped to shape: of an array record one add record (array_records.spread,
    tape.jit's the same); of scalar records, or where empty or of more axes than a Function holds, a gather of
    ``places()``."""
    if a._view is None or not math.prod(shape) or len(axes) > MAX_DIMS:
        return _gathered(a, places())
    lengths = tuple(a.shape[k] if k >= 0 else 1 for k in axes)
    strides = tuple(a._view.strides[k] if k >= 0 and a.shape[k] != 1 else 0 for k in axes)
    t = a._live_tape()
    record = array_records.spread(t, a._view, lengths, strides, tuple(counts))
    return type(a)(t._segment(), None, record).reshape(shape)


def tile(a: Any, reps: int | tuple[int, ...]) -> Any:
    """numpy.tile: a's view with an axis of length 1 before each (a promoted with 1s, reps with 1s, to one length)
    repeated along it."""
    given = [operator.index(r) for r in np.atleast_1d(reps).tolist()]
    if any(r < 0 for r in given):
        raise ValueError("negative dimensions are not allowed")
    nd = max(a.ndim, len(given))
    given, sizes, pad = [1] * (nd - len(given)) + given, [1] * (nd - a.ndim) + list(a.shape), nd - a.ndim
    return _spread(a, [m for d in range(nd) for m in (-1, d - pad if d >= pad else -1)],
                   [m for r in given for m in (r, 1)], tuple(r * n for r, n in zip(given, sizes, strict=True)),
                   lambda: np.tile(_places(a), reps))


def repeat(a: Any, repeats: int, axis: int | None = None) -> Any:
    """numpy.repeat: by an int, a's view with an axis of length 1 after ``axis`` (after the last, flattened) repeated
    along it; repeats of each element a gather."""
    def places() -> Any:
        return np.repeat(_places(a), repeats, axis)
    if not isinstance(repeats, (int, np.integer)) or not a.ndim:
        return _gathered(a, places())
    if repeats < 0:
        raise ValueError("repeats may not contain negative values.")
    k, r = a.ndim - 1 if axis is None else _axis(operator.index(axis), a.ndim), int(repeats)
    shape = (a.size * r,) if axis is None else tuple(n * (r if d == k else 1) for d, n in enumerate(a.shape))
    return _spread(a, [*range(k + 1), -1, *range(k + 1, a.ndim)], [1] * (k + 1) + [r] + [1] * (a.ndim - k - 1), shape,
                   places)


def broadcast_to(a: Any, shape: tuple[int, ...]) -> Any:
    """numpy.broadcast_to: a's view with axes of length 1 where it is broadcast, repeated along them (a copy where
    NumPy gives a read-only view)."""
    want = np.broadcast_to(np.broadcast_to(np.zeros(()), a.shape), shape).shape  # (NumPy's errors, no elements)
    axes = [-1] * (len(want) - a.ndim) + list(range(a.ndim))
    return _spread(a, axes, [w if k < 0 or a.shape[k] == 1 else 1 for w, k in zip(want, axes, strict=True)], want,
                   lambda: np.broadcast_to(_places(a), want))


def diagonal(a: Any, offset: int = 0) -> Any:
    """numpy.diagonal of a 2-d array: of an array record a view (its two steps added, as tape.jit's), else a gather."""
    if a.ndim != 2:
        raise ValueError("diagonal: tape takes 2-d arrays")
    (m, n), k = a.shape, int(offset)
    length = max(min(m, n - k) if k >= 0 else min(m + k, n), 0)
    v = a._view
    if v is None or not length:
        return _gathered(a, np.diagonal(_places(a), k).copy())
    start = k * v.strides[1] if k >= 0 else -k * v.strides[0]
    return type(a)(a._live_tape()._segment(), None, v._replace(offset=v.offset + start, shape=(length,),
                                                             strides=(v.strides[0] + v.strides[1],)))


def trace(a: Any, offset: int = 0) -> Any:
    """numpy.trace of a 2-d array: the sum of its diagonal."""
    return diagonal(a, offset).sum()


def strided_trace(a: Any) -> Any:
    """The sum of a 2-d array's diagonal as a view of every n + 1st element of it flattened (tape.jit's of a Var array
    in C order)."""
    m, n = a.shape
    return a.reshape(-1)[0:min(m, n) * (n + 1):n + 1].sum()


def diag(v: Any, k: int = 0) -> Any:
    """numpy.diag: a 2-d array's k-th diagonal; a vector as the k-th diagonal of a square of zeros (a select by NumPy's
    np.eye mask, of the vector as a row (k < 0) or column (k >= 0) padded by zeros to the square's side)."""
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    k = int(k)
    n = v.shape[0] + abs(k)
    padded = np.concatenate((v, np.zeros(abs(k)))) if k else v
    return np.where(np.eye(n, k=k, dtype=bool), padded.reshape(1, n) if k < 0 else padded.reshape(n, 1), 0.0)


def _triangle(lower: bool) -> Callable[..., Any]:
    def triangle(m: Any, k: int = 0) -> Any:
        """numpy.tril (lower) or numpy.triu: the elements on and below (above) the k-th diagonal of the last two axes,
        zeros elsewhere: a select by NumPy's np.tri mask."""
        if m.ndim < 2:
            raise ValueError("tape's tril and triu take arrays of two axes or more")
        mask = np.tri(m.shape[-2], m.shape[-1], int(k) if lower else int(k) - 1, dtype=bool)
        return np.where(mask if lower else ~mask, m, 0.0)
    return triangle


def tensordot(a: Any, b: Any, axes: int | tuple[Any, Any] = 2) -> Any:
    """numpy.tensordot as NumPy computes it: a's other axes then its contracted ones and b's contracted then its
    others, each transposed and reshaped to a matrix, their product reshaped to the other axes' lengths (NumPy's
    numbers; tape.jit's records). ``axes`` an int (a's last, b's first) or a pair of axes or lists of them."""
    sa, sb = np.shape(a), np.shape(b)
    if isinstance(axes, (int, np.integer)):
        left, right = list(range(len(sa) - int(axes), len(sa))), list(range(int(axes)))
    else:
        left, right = ([int(k) for k in np.atleast_1d(side)] for side in axes)
    left, right = [_axis(k, len(sa)) for k in left], [_axis(k, len(sb)) for k in right]
    if len(left) != len(right) or any(sa[i] != sb[j] for i, j in zip(left, right, strict=True)):
        raise ValueError("shape-mismatch for sum")
    free_a, free_b = [k for k in range(len(sa)) if k not in left], [k for k in range(len(sb)) if k not in right]
    inner = math.prod(sa[k] for k in left)
    at = np.transpose(a, free_a + left).reshape(math.prod(sa[k] for k in free_a), inner)
    bt = np.transpose(b, right + free_b).reshape(inner, math.prod(sb[k] for k in free_b))
    product = at @ bt
    shape = tuple(sa[k] for k in free_a) + tuple(sb[k] for k in free_b)
    return product.reshape(shape) if shape else product[0, 0]


def outer(a: Any, b: Any) -> Any:
    """numpy.outer: a (flattened) as a column times b (flattened) as a row."""
    return a.reshape(-1, 1) * (b.reshape(1, -1) if hasattr(b, "reshape") else np.reshape(b, (1, -1)))


def diff(a: Any, n: int = 1, axis: int = -1) -> Any:
    """numpy.diff: n differences of neighbours along axis (slices: nothing but subtractions recorded)."""
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    head = (slice(None),) * _axis(axis, a.ndim)
    for _ in range(n):
        a = a[(*head, slice(1, None))] - a[(*head, slice(None, -1))]
    return a


def norm(x: Any, ord: int | float | str | None = None, axis: int | tuple[int, ...] | None = None,  # noqa: A002
         keepdims: bool = False) -> Any:
    """numpy.linalg.norm: of vectors 2 (default), 1 or inf over axis (all elements for None), of
    matrices (two axes) the Frobenius norm. At 0 the 2-norm's slope is 0 (0 times sqrt'(0) adds
    nothing; JAX gives NaN)."""
    matrix = isinstance(axis, tuple) and len(axis) == 2 or axis is None and ord is not None and x.ndim == 2
    if matrix and ord in (2, -2, "nuc") and axis in (None, (-2, -1), (x.ndim - 2, x.ndim - 1)) and not keepdims:
        return linalg.matrix_norm(x, ord)  # by the singular values (one svd record)
    if matrix and ord not in (None, "fro"):
        raise ValueError(f"norm: tape takes vector norms and the Frobenius, 2, -2 and nuclear norms of matrices "
                         f"(over the last two axes), not ord={ord!r}")
    if ord in (None, 2, "fro"):
        return ((x * x).sum(axis, keepdims)) ** 0.5
    if ord == 1:
        return abs(x).sum(axis, keepdims)
    if ord == np.inf:
        return abs(x).max(axis, keepdims)
    raise ValueError(f"norm: tape takes ord None, 1, 2 or inf (vector norms), got {ord!r}")


def expand_dims(a: Any, axis: int | tuple[int, ...]) -> Any:
    """numpy.expand_dims: a size-1 axis at each of ``axis`` (of the result)."""
    axes = np.atleast_1d(axis).tolist()
    ndim = a.ndim + len(axes)
    where = {_axis(k, ndim) for k in axes}
    if len(where) != len(axes):
        raise ValueError("repeated axis")
    dims = iter(a.shape)
    return a.reshape(tuple(1 if k in where else next(dims) for k in range(ndim)))


def flip(a: Any, axis: int | tuple[int, ...] | None = None) -> Any:
    """numpy.flip: a view with the order of elements along ``axis`` (all, for None) reversed."""
    axes = range(a.ndim) if axis is None else {_axis(k, a.ndim) for k in np.atleast_1d(axis).tolist()}
    return a[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(a.ndim))]


def moveaxis(a: Any, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Any:
    """numpy.moveaxis: the axes ``source`` at the places ``destination``, the others in order."""
    src = [_axis(k, a.ndim) for k in np.atleast_1d(source).tolist()]
    dst = [_axis(k, a.ndim) for k in np.atleast_1d(destination).tolist()]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [k for k in range(a.ndim) if k not in src]
    for place, axis in sorted(zip(dst, src, strict=True)):
        order.insert(place, axis)
    return a.transpose(*order)


FUNCTIONS: dict[Any, Callable[..., Any]] = {  # numpy function -> on a VarArray (its __array_function__)
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
    np.size: lambda a: a.size,
    np.swapaxes: lambda a, axis1, axis2: a.swapaxes(axis1, axis2),
    np.squeeze: lambda a, axis=None: a.squeeze(axis),
    np.expand_dims: expand_dims,
    np.flip: flip,
    np.ravel: lambda a: a.ravel(),
    np.copy: lambda a: a.copy(),
    np.roll: roll,
    np.tile: tile,
    np.repeat: repeat,
    np.broadcast_to: broadcast_to,
    np.diagonal: diagonal,
    np.diag: diag,
    np.tril: _triangle(lower=True),
    np.triu: _triangle(lower=False),
    np.tensordot: tensordot,
    np.trace: trace,
    np.outer: outer,
    np.diff: diff,
    np.linalg.norm: norm,
    np.var: lambda a, axis=None, ddof=0, keepdims=False: a.var(axis, ddof=ddof, keepdims=keepdims),
    np.std: lambda a, axis=None, ddof=0, keepdims=False: a.std(axis, ddof=ddof, keepdims=keepdims),
    **{fn: (lambda a, axis=None, keepdims=False, name=name: getattr(a, name)(axis, keepdims))
       for fn, name in ((np.max, "max"), (np.amax, "max"), (np.min, "min"), (np.amin, "min"))},
    np.moveaxis: lambda a, source, destination: moveaxis(a, source, destination),
    **{fn: (lambda a, *value, fill=fill: np.full(a.shape, float(value[0]) if fill is None else fill))  # (constants)
       for fn, fill in ((np.zeros_like, 0.0), (np.empty_like, 0.0), (np.ones_like, 1.0), (np.full_like, None))},
    **EINSUM,
}
