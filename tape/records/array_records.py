"""Recording array records: one record per array operation, its elements computed at once.

These functions take a storage and views (tape/sweeps/driver.py) and return views;
tape/arrays/varray.py wraps them in VarArrays. Indexing asks NumPy itself: the key
is applied to the real elements in the arena, and a result that shares their
memory is a view (recorded as nothing), anything else is a gather record.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from tape.kernels.array_ops import ACONSTANT, ARRAY_OPCODE, INPUT, RULE
from tape.kernels.array_rule import kept
from tape.kernels.ops import ELEM
from tape.records.storage import Storage
from tape.sweeps.driver import View, view, whole

# arrays with fewer elements are recorded a scalar record per element: an array record costs about
# 10 µs of Python per call in the sweeps, a scalar record 5-10 ns per element; measured (replayed
# value_and_grad) array records win from about 600 elements with fused runs, 2,000 without
SMALL = 1024


def small() -> int:
    """The size from which an array is recorded as array records (SMALL, read at each call)."""
    return SMALL


def leaf(t: Storage, values: np.ndarray, constant: bool = False) -> View:
    """An array record holding values: inputs, or numbers an op reads."""
    row = t._push_array(ACONSTANT if constant else INPUT, values.shape, values=values)
    return whole(row, t._plan(row))


def constant(t: Storage, values: object) -> View:
    """A constant of values; on a tape recorded afresh, once per float64 array of at least SMALL elements while its
    numbers stay the same (``x @ W`` in a loop: one W, not one a step, each kept for its reverse)."""
    if type(values) is not np.ndarray or values.dtype != np.float64 or values.size < SMALL or not t._recycling or \
            t._traced:
        return leaf(t, np.asarray(values, np.float64), constant=True)
    found = t._arrays.get(id(values))  # (a dead array's id may come again: its numbers are compared)
    if found is not None and t._same(found, values):
        return found
    made = t._arrays[id(values)] = leaf(t, values, constant=True)
    return made


def number(t: Storage, c: float) -> View:
    """A 0-d constant of c, recorded once per tape where it recycles (value_and_grad's: ``x * 2.0`` in a loop is
    one record, not one per step); a traced tape records each, so that a Function's records are its program's."""
    if not t._recycling or t._traced:
        return constant(t, c)
    key = (c, math.copysign(1.0, c))  # -0.0 apart from 0.0 (a NaN equals nothing: recorded each time)
    found = t._numbers.get(key)
    if found is None:
        found = t._numbers[key] = constant(t, c)
    return found


def _record(t: Storage, name: str, shape: tuple[int, ...], inputs: tuple[View, ...], **extra) -> View:
    row = t._push_array(ARRAY_OPCODE[name], shape, inputs, **extra)
    return whole(row, t._plans[-1])


@functools.lru_cache(maxsize=1024)
def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast shape, or its error naming the shapes; decided once per shapes (np.broadcast_shapes takes
    3-4 µs, a lookup 0.2: ``c * u`` in a loop broadcasts a 0-d constant at every step)."""
    if len(set(shapes)) == 1:
        return shapes[0]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as exc:
        raise ValueError(f"{exc} (shapes {' and '.join(map(str, shapes))})") from None


def elementwise(t: Storage, name: str, *views: View) -> View:
    """A unary, binary, compare or select record over broadcast operands."""
    return _record(t, name, broadcast(*(v.shape for v in views)), views)


def axes(ndim: int, axis: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """The axes NumPy's ``axis=`` names, as sorted non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    picked = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    normal = tuple(sorted(normalize_axis_index(int(a), ndim) for a in picked))
    if len(set(normal)) != len(normal):
        raise ValueError(f"repeated axis in {axis!r}")
    return normal


def reduce(t: Storage, name: str, v: View, axis: int | tuple[int, ...] | None, keepdims: bool = False) -> View:
    """sum, logsumexp, max, min, all or any over axes (all of them for None)."""
    over = axes(len(v.shape), axis)
    if name in ("logsumexp", "max", "min") and any(v.shape[k] == 0 for k in over):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity (shape {v.shape}, "
                         f"axis {axis}): an empty axis has no {name}, as in NumPy; nothing recorded")
    shape = kept(v.shape, over) if keepdims else tuple(n for k, n in enumerate(v.shape) if k not in over)
    return _record(t, name, shape, (v,), axes=over)


def along(t: Storage, name: str, v: View, axis: int) -> View:
    """cumsum, cumprod or sort of v along one axis: a record of v's shape."""
    if not v.shape:
        raise ValueError(f"{name} of a 0-d array: use reshape(1) first")
    return _record(t, name, v.shape, (v,), axes=(normalize_axis_index(int(axis), len(v.shape)),))


def _widened(v: View, left: bool) -> View:
    """A 1-d matmul operand as a 2-d view: (1, k) on the left, (k, 1) on the right."""
    if len(v.shape) != 1:
        return v
    if left:
        return View(v.record, v.offset, (1, v.shape[0]), (0, v.strides[0]))
    return View(v.record, v.offset, (v.shape[0], 1), (v.strides[0], 0))


def matmul(t: Storage, a: View, b: View) -> View:
    """a @ b with NumPy's rules: 1-d operands widened and dropped again, batch axes broadcast."""
    if not a.shape or not b.shape:
        raise ValueError("matmul: an operand is 0-d (use *)")
    A, B = _widened(a, True), _widened(b, False)
    if A.shape[-1] != B.shape[-2]:
        raise ValueError(f"matmul: inner dimensions differ (shapes {a.shape} and {b.shape})")
    batch = broadcast(A.shape[:-2], B.shape[:-2])
    wide = (*batch, A.shape[-2], B.shape[-1])
    shape = batch + ((A.shape[-2],) if len(a.shape) > 1 else ()) + ((B.shape[-1],) if len(b.shape) > 1 else ())
    return _record(t, "matmul", shape, (A, B), wide=wide)


def computed(t: Storage, name: str, *views: View) -> View:
    """A record whose rule computes its values before anything is recorded (np.linalg's: a LinAlgError, a
    singular or not positive definite matrix, leaves the tape as it was)."""
    rule = RULE[ARRAY_OPCODE[name]]
    shape = rule.shapes((), (), [v.shape for v in views], ())[0]
    out = np.empty(shape)
    rule.forward(None, [view(t, t._aval, v) for v in views], out)
    return _record(t, name, shape, views, values=out)


def pack(t: Storage, rows: np.ndarray) -> View:
    """An array record of scalar records' values, shaped like rows."""
    return _record(t, "pack", rows.shape, (), places=np.ascontiguousarray(rows.reshape(-1), np.int64))


def elem(t: Storage, v: View) -> int:
    """A scalar record reading the one element of 0-d view v."""
    return t._push(ELEM, v.record, v.offset, float(t._aval[t._plan(v.record).offset + v.offset]))


def places(v: View) -> np.ndarray:
    """The place of each element of v in its record's region."""
    places = np.full(v.shape, v.offset, np.int64)
    for k, (n, stride) in enumerate(zip(v.shape, v.strides, strict=True)):
        places += (np.arange(n, dtype=np.int64) * stride).reshape((n,) + (1,) * (len(v.shape) - k - 1))
    return places


def index(t: Storage, v: View, key: object) -> View:
    """v[key]: a view where NumPy gives one, else a gather record."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) == len(v.shape) and all(type(k) is int for k in key):  # one element: its place found here, not
        return View(v.record, _element(v, key), (), ())  # by NumPy over the arena (8 µs a call, this 1 µs)
    sliced = _sliced(v, key)
    if sliced is not None:
        return sliced
    if not any(k is Ellipsis for k in key):
        key = (*key, Ellipsis)  # an all-integer key then gives a 0-d view, not a copied number
    if not all(k is None or k is Ellipsis or type(k) is slice or isinstance(k, (int, np.integer)) and
               not isinstance(k, (bool, np.bool_)) for k in key):  # not basic indexing: NumPy copies
        return gather(t, v.record, places(v)[key])
    arena = t._aval
    elements = np.ndarray(v.shape, np.float64, arena, 8 * (t._plan(v.record).offset + v.offset),
                          tuple(8 * s for s in v.strides))
    picked = elements[key]  # a view
    start = (picked.__array_interface__["data"][0] - arena.__array_interface__["data"][0]) // 8
    return View(v.record, start - t._plan(v.record).offset, picked.shape, tuple(s // 8 for s in picked.strides))


def _sliced(v: View, key: tuple) -> View | None:
    """v[key] for slices and ints of the leading axes, as NumPy's basic indexing computes it (a slice picks
    range(n)[slice]): 1 µs, NumPy over the arena 6; None for other keys, an index out of bounds (NumPy's
    error then) or an empty slice (where NumPy starts at 0)."""
    if len(key) > len(v.shape):
        return None
    offset, shape, strides = v.offset, [], []
    for k, n, stride in zip(key, v.shape, v.strides, strict=False):
        if type(k) is int and -n <= k < n:
            offset += (k + n if k < 0 else k) * stride
        elif type(k) is slice and all(type(b) is int or b is None for b in (k.start, k.stop, k.step)) and k.step != 0:
            picked = range(n)[k]
            if not picked:
                return None
            offset += picked.start * stride
            shape.append(len(picked))
            strides.append(stride * picked.step)
        else:
            return None
    return View(v.record, offset, (*shape, *v.shape[len(key):]), (*strides, *v.strides[len(key):]))


def _element(v: View, key: tuple[int, ...]) -> int:
    """The place in v's record of the element at integer key (NumPy's IndexError outside v)."""
    offset = v.offset
    for axis, (k, n, stride) in enumerate(zip(key, v.shape, v.strides, strict=True)):
        if not -n <= k < n:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
        offset += (k + n if k < 0 else k) * stride
    return offset


def reshape(t: Storage, v: View, shape: tuple[int, ...]) -> View:
    """A view when the elements allow one (as NumPy decides), else a copy by gather."""
    try:
        new_shape, strides = _reshaped(v.shape, v.strides, shape)
    except TypeError:  # a shape lru_cache cannot hash (an ndarray in it): NumPy takes it or says why
        new_shape, strides = _reshaped.__wrapped__(v.shape, v.strides, shape)
    if strides is None:
        return gather(t, v.record, places(v).reshape(new_shape))
    return View(v.record, v.offset, new_shape, strides)


@functools.lru_cache(maxsize=1024)
def _reshaped(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]
              ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """(NumPy's shape for ``new``: its checks and -1; the element strides of an array of shape and strides
    reshaped to it as a view, None where NumPy would copy): all it depends on, so decided once each (5 µs)."""
    new_shape = np.empty(shape, np.bool_).reshape(new).shape
    elements = np.lib.stride_tricks.as_strided(np.zeros(1), shape, tuple(8 * s for s in strides))  # (never read)
    try:
        reshaped = elements.view()
        reshaped.shape = new_shape  # raises where a copy would be needed
    except AttributeError:
        return new_shape, None
    return new_shape, tuple(s // 8 for s in reshaped.strides)


def transpose(v: View, axes: tuple[int, ...] | None) -> View:
    ndim = len(v.shape)
    if axes is not None and len(axes) != ndim:
        raise ValueError(f"axes {axes!r} don't match an array of {ndim} dimensions")
    order = tuple(reversed(range(ndim))) if axes is None else tuple(normalize_axis_index(int(a), ndim) for a in axes)
    if len(set(order)) != ndim:  # (NumPy's AxisError above for an axis out of bounds: 5 of 4 axes was read as 1)
        raise ValueError(f"repeated axis in transpose {axes!r}")
    return View(v.record, v.offset, tuple(v.shape[k] for k in order), tuple(v.strides[k] for k in order))


def copy(t: Storage, v: View) -> View:
    """v as a record of its own (contiguous region): for outputs that are views of other records."""
    if v == whole(v.record, t._plan(v.record)):
        return v
    return gather(t, v.record, places(v))


def gather(t: Storage, record: int, chosen: np.ndarray, shape: tuple[int, ...] | None = None) -> View:
    """A record of the elements at places ``chosen`` (any shape) of a record's region; with ``shape``, chosen is
    one flat read-only index, the plan's places as it is (np.pad's: one object for every step of a loop)."""
    if shape is None:
        shape, chosen = chosen.shape, np.ascontiguousarray(chosen.reshape(-1))
    return _record(t, "gather", shape, (whole(record, t._plan(record)),), places=chosen)


def spread(t: Storage, v: View, lengths: tuple[int, ...], strides: tuple[int, ...], counts: tuple[int, ...]) -> View:
    """The elements of v's record at the view of ``lengths`` and ``strides`` (1 and 0 along the axes they repeat on),
    each repeated ``counts`` times along its axis: one add record of that view and a constant -0.0 of shape counts,
    which NumPy broadcasts (x + -0.0 is x bit for bit, -0.0 and NaN kept); its reverse sums the repeats back by
    NumPy's sums, where a gather's reads every place (np.broadcast_to, np.tile, np.repeat)."""
    return elementwise(t, "add", View(v.record, v.offset, lengths, strides), leaf(t, np.full(counts, -0.0), True))


def scatter(t: Storage, v: View, chosen: np.ndarray, shape: tuple[int, ...]) -> View:
    """A record of ``shape``, zero but for v's elements (C order) added at places ``chosen`` of its region."""
    return _record(t, "scatter", shape, (v,), places=np.ascontiguousarray(np.reshape(chosen, -1), np.int64))


def permute(t: Storage, name: str, a: View, x: View, axis: int) -> View:
    """sort_as or unsort_as: x moved along axis as sorting a moves a's elements, or back."""
    return _record(t, name, x.shape, (a, x), axes=(axis,))


def join(t: Storage, views: list[View], axis: int) -> View:
    """np.concatenate of views along axis: a join record of two or three views (chained past three)."""
    if not views or not views[0].shape:
        raise ValueError("zero-dimensional arrays cannot be concatenated, as in NumPy")
    k = normalize_axis_index(axis, len(views[0].shape))
    while len(views) > 1:
        group, views = views[:3], views[3:]
        shape = RULE[ARRAY_OPCODE["join"]].shapes((), (), [v.shape for v in group], (k,))[0]
        views = [_record(t, "join", shape, tuple(group), axes=(k,)), *views]
    return views[0]


def pad(t: Storage, v: View, widths: list[list[int]], values: list[list[float]]) -> View:
    """np.pad's 'constant' mode: axis by axis, a join of v between constant slabs (a later axis's
    slabs span the earlier ones' pads, so its numbers fill the corners, as NumPy's)."""
    for axis, ((before, after), (low, high)) in enumerate(zip(widths, values, strict=True)):
        slabs = [constant(t, np.full(v.shape[:axis] + (n,) + v.shape[axis + 1:], c)) if n else None
                 for n, c in ((before, low), (after, high))]
        v = join(t, [part for part in (slabs[0], v, slabs[1]) if part is not None], axis)
    return v


def size(v: View) -> int:
    return math.prod(v.shape)

