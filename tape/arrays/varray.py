"""VarArray: NumPy-style arrays of records, in one of two forms.

Small arrays (fewer than ``array_records.SMALL`` elements, the measured crossover) hold one scalar record per
element: every arithmetic operation broadcasts as NumPy does and appends one scalar record per element with
vectorized writes, so the scalar sweeps see an ordinary tape. Larger arrays are array records
(tape/records/array_records.py): one record per operation, elements in an arena; slicing, reshaping and
transposing make views and record nothing. An operation with any array-record operand, or whose result is large,
records an array record; the user writes the same code either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import numpy as np

from tape.arrays import assign, linalg, methods, scans
from tape.arrays import small as _small
from tape.arrays.conditions import ArrayCondition
from tape.arrays.operands import as_view, common_tape, operands, shape_of
from tape.errors import StaleHandleError
from tape.kernels.ops import ARITHMETIC, CONSTANT, ELEM, OPCODE, OPS, UNARY_UFUNCS
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.handles import ARRAY_OF, FUNCTION_HANDLERS, UFUNC_HANDLERS, Condition, surviving, warn_value_in_trace
from tape.records.storage import Segment, Storage
from tape.sweeps.driver import View

if TYPE_CHECKING:
    from tape.tape import Tape

_NO_ROWS = np.zeros(0, np.int64)
Operand: TypeAlias = "VarArray | Var | float | np.ndarray"  # what arithmetic with a VarArray takes

BINARY = {getattr(np, s.ufunc): s for s in ARITHMETIC}  # numpy ufunc -> how it is recorded
# the codes of tape/arrays/small.py's loop; -1: no const op, a number becomes a constant record (NumPy path)
_LOOP = {ufunc: (OPCODE[s.pair], OPCODE.get(s.var_c, -1), OPCODE.get(s.c_var, -1), s.negate)
         for ufunc, s in BINARY.items()}
UNARY_CODES = {getattr(np, ufunc): OPCODE[name] for name, ufunc in UNARY_UFUNCS.items()}
_NAMES = {**{u: s.pair for u, s in BINARY.items()}, **{u: OPS[c].name for u, c in UNARY_CODES.items()}}  # array ops'


def wrap(t: Storage, rows: np.ndarray) -> Any:
    """Scalar records as a VarArray, or a Var for a single 0-d record."""
    if rows.ndim == 0:
        return Var._at(t._segment(), int(rows))
    return VarArray(t._segment(), rows)


def wrap_view(t: Storage, v: View) -> Any:
    """A view of an array record as a VarArray; a 0-d one as a Var (an elem record reading it)."""
    if not v.shape:
        return Var._at(t._segment(), array_records.elem(t, v))
    return VarArray(t._segment(), None, v)


def _blocked(parts: list[tuple[Storage | None, Any]], shape: tuple[int, ...]) -> bool:
    return any(isinstance(p, View) for _, p in parts) or math.prod(shape) >= array_records.small()


def _broadcast(parts: list[tuple[Storage | None, Any]]) -> tuple[int, ...]:
    return array_records.broadcast(*(shape_of(p) for _, p in parts))


def array_operands(inputs: tuple[Any, ...]) -> tuple[Storage, list[Any]] | None:
    """(tape, a View, float or float64 ndarray each) for array records' VarArrays of one live segment, floats and data
    arrays: the common case, recorded as the general path records it without its operand handling (5 µs of a record's
    20; a GRU's ``xs[t] + h @ U``, an ndarray first, 4 µs of its 24)."""
    seg = None
    parts: list[Any] = []
    for x in inputs:
        if type(x) is VarArray and x._view is not None and (seg is None or x._seg is seg) and x._seg.live:
            seg = x._seg
            parts.append(x._view)
        elif type(x) is float or type(x) is np.ndarray and x.dtype == np.float64 and x.ndim:
            parts.append(x)
        else:
            return None
    return None if seg is None else (seg.tape, parts)


def elementwise(ufunc: np.ufunc, *inputs: Any) -> Any:
    """Record ``ufunc`` over broadcast operands; NotImplemented for operands it cannot take."""
    found = array_operands(inputs)
    if found is not None:
        on = found[0]
        views = [p if type(p) is View else array_records.number(on, p) if type(p) is float else
                 array_records.constant(on, p) for p in found[1]]
        return wrap_view(on, array_records.elementwise(on, _NAMES[ufunc], *views))
    small = _small.binary(_LOOP[ufunc], *inputs, VarArray) if len(inputs) == 2 and ufunc in _LOOP else None
    if small is not None:
        return small
    parts = operands(*inputs)
    if parts is None:
        return NotImplemented
    t = common_tape(parts)
    if t is None:
        return NotImplemented
    shape = _broadcast(parts)
    if _blocked(parts, shape):
        views = [as_view(t, rt is not None, p) for rt, p in parts]
        return wrap_view(t, array_records.elementwise(t, _NAMES[ufunc], *views))
    if ufunc in BINARY and not BINARY[ufunc].var_c:  # no const op: numbers as constant records
        parts = [(rt, p) if rt is not None else
                 (t, t._append_block(CONSTANT, p.size, values=p.ravel()).reshape(p.shape)) for rt, p in parts]
    recorded = [rt is not None for rt, _ in parts]
    arrays = [p.ravel() if p.shape == shape else np.broadcast_to(p, shape).ravel() for _, p in parts]
    if ufunc in UNARY_CODES:
        rows = t._append_block(UNARY_CODES[ufunc], arrays[0].size, in0=arrays[0])
    elif recorded == [True, True]:
        rows = t._append_block(OPCODE[BINARY[ufunc].pair], arrays[0].size, in0=arrays[0], in1=arrays[1])
    elif recorded[0]:
        consts = -arrays[1] if BINARY[ufunc].negate else arrays[1]
        rows = t._append_block(OPCODE[BINARY[ufunc].var_c], arrays[0].size, in0=arrays[0], consts=consts)
    else:
        rows = t._append_block(OPCODE[BINARY[ufunc].c_var], arrays[1].size, in0=arrays[1], consts=arrays[0])
    return wrap(t, rows.reshape(shape))


class VarArray:
    """An n-d array of tape records (any shape) with NumPy semantics (see the module docstring)."""

    __slots__ = ("_seg", "_rows", "_view", "_shape", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, seg: Segment, idx: np.ndarray | None, view: View | None = None):
        # _rows: the scalar records' indices (or tape/arrays/small.py's range of new rows); else a view
        self._seg, self._rows, self._view = seg, (_NO_ROWS if idx is None else idx), view
        self._shape = view.shape if idx is None else idx.shape  # type: ignore[union-attr]  # one is given
        if view is not None and seg.tape._recycling:  # (tape/sweeps/arenas.py)
            seg.tape._register(self, view.record)

    @property
    def _idx(self) -> np.ndarray:
        """The scalar records' indices, an array of the array's shape."""
        if type(self._rows) is range:
            self._rows = np.arange(self._rows.start, self._rows.stop).reshape(self._shape)
        return self._rows  # type: ignore[return-value]  # an array now

    def _operand(self) -> tuple[Storage, Any]:
        """(tape, scalar record indices) or (tape, view of an array record): see tape/arrays/operands.py."""
        return self._live_tape(), (self._idx if self._view is None else self._view)

    # -- shape and views (no records) ---------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d VarArray")
        return self.shape[0]

    @property
    def tape(self) -> Tape:
        """The tape these records are on."""
        return self._seg.tape  # type: ignore[return-value]  # a Tape: only tape.Tape makes records

    def _live_tape(self) -> Storage:
        if not self._seg.live:
            highest = int(self._idx.max(initial=-1)) if self._view is None else self._view.record
            self._seg = surviving(self._seg, highest, "records of this array were")
        return self._seg.tape

    def __getitem__(self, key):
        if type(key) is int and self._view is None and len(self._shape) == 1 and self._seg.live and (
                -self._shape[0] <= key < self._shape[0]):  # an element of 1-d scalar records: 1.1 -> 0.3 µs (the
            return Var._at(self._seg, int(self._rows[key]))  # articles' tiny program reads 6 from an ndarray x)
        if isinstance(key, (VarArray, Var, ArrayCondition, Condition)) or (
                isinstance(key, tuple) and any(isinstance(k, (VarArray, Var, ArrayCondition)) for k in key)):
            raise TypeError("index a VarArray with integers, slices or NumPy arrays, not with recorded values")
        t = self._live_tape()
        if self._view is not None:
            return wrap_view(t, array_records.index(t, self._view, key))
        return wrap(t, np.asarray(self._idx[key]))

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def reshape(self, *shape) -> VarArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if self._view is None:
            return VarArray(self._seg, self._idx.reshape(shape))
        t = self._live_tape()
        return VarArray(t._segment(), None, array_records.reshape(t, self._view, tuple(shape)))

    def transpose(self, *axes) -> VarArray:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if self._view is None:
            return VarArray(self._seg, self._idx.transpose(*axes))
        return VarArray(self._seg, None, array_records.transpose(self._view, axes or None))

    T = property(lambda self: self.transpose())

    def ravel(self) -> VarArray:
        return self.reshape(-1)

    def flatten(self) -> VarArray:
        return self.reshape(-1)

    def swapaxes(self, a: int, b: int) -> VarArray:
        return methods.swapaxes(self, a, b)

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> VarArray:
        return methods.squeeze(self, axis)

    def copy(self) -> VarArray:
        """An independent VarArray of the same records (assigning into it leaves self as it is)."""
        return VarArray(self._seg, self._idx.copy()) if self._view is None else VarArray(self._seg, None, self._view)

    def __copy__(self) -> VarArray:  # the same records: an assignment into self (swapping its records) leaves them
        return _small.fresh(VarArray, self._seg, self._rows, self._shape, self._view)

    def __setitem__(self, key: Any, value: Any) -> None:
        """self[key] = value, recorded (tape/arrays/assign.py): value a Var, VarArray, number or
        NumPy array broadcast to the slot as NumPy does."""
        assign.setitem(self, key, value)

    def _scalars(self) -> VarArray:
        """The same elements as scalar records (elem records reading an array record): for the ops
        that array records do not have."""
        if self._view is None:
            return self
        t = self._live_tape()
        places = array_records.places(self._view)
        values = t._array_values(self._view).reshape(-1)
        rows = t._append_block(ELEM, values.size, in0=self._view.record, in1=places.reshape(-1), values=values)
        return VarArray(t._segment(), rows.reshape(self.shape))

    def _vars(self) -> list[Var]:
        """Its elements as Vars, in C order (elem records where it is an array record)."""
        scalars = self._scalars()
        return [Var._at(scalars._seg, int(row)) for row in scalars._idx.reshape(-1)]

    # -- values ---------------------------------------------------------------------------

    @property
    def value(self) -> np.ndarray:
        """The records' values, shaped like the array (inside tape.trace: kept by every replay, with a warning)."""
        t = self._live_tape()
        if t._tracing:
            warn_value_in_trace(t)
        return self._numbers()

    @property
    def grad(self) -> np.ndarray:
        """Adjoints of the last backward pass, shaped like the array (0 where it did not reach)."""
        t = self._live_tape()
        if self._view is not None:
            return t._array_grads(self._view)
        rows = self._rows  # Tape.array's small leaves in a row: a slice, no fancy index (2.9 -> 2.1 µs for 6)
        return t._grads(slice(rows.start, rows.stop) if type(rows) is range else self._idx.ravel()).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a tape.VarArray is not converted to numbers silently: use .value")

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a tape.VarArray is not defined; compare it and use .all() or .any()")

    def __repr__(self) -> str:
        try:
            t = self._live_tape()
            values = np.array2string(t._val[self._idx] if self._view is None else t._array_values(self._view),
                                     threshold=8, precision=4)
        except StaleHandleError:
            values = "stale"
        return f"VarArray(shape={self.shape}, value={values})"

    def _numbers(self) -> np.ndarray:
        t = self._live_tape()
        return t._val[self._idx] if self._view is None else t._array_values(self._view)

    def tolist(self) -> Any:
        """The values as (nested) Python floats, read on purpose: inside tape.trace, numbers every
        replay keeps, without TracingWarning (``.value`` warns)."""
        return self._numbers().tolist()

    def item(self) -> float:
        """The value of a one-element array as a Python float, read on purpose (see tolist)."""
        return methods.item(self)

    # -- arithmetic -------------------------------------------------------------------------

    def _unary(self, code: int) -> Any:
        """Record unary op ``code`` on every element (tape.sigmoid(X), tape.relu(X), ...)."""
        t = self._live_tape()
        if self._view is not None or self.size >= array_records.small():
            return wrap_view(t, array_records.elementwise(t, OPS[code].name, as_view(t, True, self._operand()[1])))
        small = _small.unary(code, self, VarArray)
        rows = None if small is not None else t._append_block(code, self.size, in0=self._idx.ravel())
        return small if rows is None else VarArray(t._segment(), rows.reshape(self.shape))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return UFUNC_HANDLERS[0](ufunc, method, inputs, kwargs)  # tape/arrays/ufuncs.py

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(f"numpy.{func.__name__} is not supported on tape.VarArray")
        return handler(*args, **kwargs)

    def __add__(self, other: Operand) -> VarArray: return elementwise(np.add, self, other)
    def __radd__(self, other: Operand) -> VarArray: return elementwise(np.add, other, self)
    def __sub__(self, other: Operand) -> VarArray: return elementwise(np.subtract, self, other)
    def __rsub__(self, other: Operand) -> VarArray: return elementwise(np.subtract, other, self)
    def __mul__(self, other: Operand) -> VarArray: return elementwise(np.multiply, self, other)
    def __rmul__(self, other: Operand) -> VarArray: return elementwise(np.multiply, other, self)
    def __truediv__(self, other: Operand) -> VarArray: return elementwise(np.true_divide, self, other)
    def __rtruediv__(self, other: Operand) -> VarArray: return elementwise(np.true_divide, other, self)
    def __pow__(self, other: Operand) -> VarArray: return elementwise(np.power, self, other)
    def __rpow__(self, other: Operand) -> VarArray: return elementwise(np.power, other, self)
    def __neg__(self) -> VarArray: return elementwise(np.negative, self)
    def __abs__(self) -> VarArray: return elementwise(np.absolute, self)
    def __pos__(self) -> VarArray: return self.copy()  # a new array, as NumPy: item assignment cannot reach x

    def __lt__(self, other: Operand) -> ArrayCondition:  # type: ignore[misc]  # Var's returns a Condition
        return ArrayCondition.of(np.less, self, other)

    def __le__(self, other: Operand) -> ArrayCondition:  # type: ignore[misc]  # Var's returns a Condition
        return ArrayCondition.of(np.less_equal, self, other)

    def __gt__(self, other: Operand) -> ArrayCondition:  # type: ignore[misc]  # Var's returns a Condition
        return ArrayCondition.of(np.greater, self, other)

    def __ge__(self, other: Operand) -> ArrayCondition:  # type: ignore[misc]  # Var's returns a Condition
        return ArrayCondition.of(np.greater_equal, self, other)

    def __eq__(self, other: object) -> ArrayCondition:  # type: ignore[override]
        return ArrayCondition.of(np.equal, self, other)

    def __ne__(self, other: object) -> ArrayCondition:  # type: ignore[override]
        return ArrayCondition.of(np.not_equal, self, other)

    __hash__ = object.__hash__

    def __matmul__(self, other: VarArray | np.ndarray) -> Any: return matmul(self, other)  # a Var for 1-d @ 1-d
    def __rmatmul__(self, other: VarArray | np.ndarray) -> Any: return matmul(other, self)

    # -- reductions ------------------------------------------------------------------------------
    # over all axes the result is a Var; over some, a VarArray (a Var where no axis is left)

    @overload
    def sum(self, axis: None = None, keepdims: bool = False) -> Var: ...
    @overload
    def sum(self, axis: int | tuple[int, ...], keepdims: bool = False) -> Any: ...
    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        return reduce(self, axis, "sum", keepdims)

    @overload
    def prod(self, axis: None = None, keepdims: bool = False) -> Var: ...
    @overload
    def prod(self, axis: int | tuple[int, ...], keepdims: bool = False) -> Any: ...
    def prod(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        return reduce(self._scalars(), axis, "prod", keepdims)  # records a scalar tree, also for array records

    def _reduce(self, name: str, axis: int | tuple[int, ...] | None, keepdims: bool) -> Any:
        """One array record reducing over axes (small arrays are packed into one first)."""
        t = self._live_tape()
        return wrap_view(t, array_records.reduce(t, name, as_view(t, True, self._operand()[1]), axis, keepdims))

    def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        """The largest element over axes (NaN if one is NaN); its adjoint goes to the elements equal to
        it, in equal shares at a tie."""
        return self._reduce("max", axis, keepdims)

    def min(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        """The smallest element over axes, as max."""
        return self._reduce("min", axis, keepdims)

    def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        """The sum over axes times 1/n."""
        return methods.mean(self, axis, keepdims)

    def var(self, axis: int | tuple[int, ...] | None = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """mean((x - mean(x))**2) over axes, divided by n - ddof instead of n, as numpy.var."""
        return methods.var(self, axis, ddof, keepdims)

    def std(self, axis: int | tuple[int, ...] | None = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """sqrt(var): at a spread of 0 its slope is 0 (0 times sqrt'(0) adds nothing; JAX gives NaN)."""
        return methods.std(self, axis, ddof, keepdims)

    def dot(self, other: VarArray | np.ndarray) -> Any:
        return matmul(self, other)

    # -- scans and sort (tape/arrays/scans.py) -----------------------------------------------------

    def cumsum(self, axis: int | None = None) -> VarArray:
        """Cumulative sums along axis (of the flattened array for None)."""
        return scans.cumulative(self, "cumsum", axis)

    def cumprod(self, axis: int | None = None) -> VarArray:
        """Cumulative products along axis; the derivatives are exact with zeros in the input."""
        return scans.cumulative(self, "cumprod", axis)

    def sort(self, axis: int = -1) -> None:
        """Sort in place along axis, as ndarray.sort (np.sort gives a sorted copy)."""
        y = scans.sort(self, axis)
        self._rows, self._view, self._seg = y._rows, y._view, y._seg

    def argsort(self, axis: int | None = -1) -> np.ndarray:
        """The stable sorting permutation of the values: an array of ints (data, not recorded)."""
        return scans.argsort(self, axis)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """Where the largest value is (NumPy's: the first of ties): ints (data, not recorded)."""
        return scans.position(self, "argmax", axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Any:
        """Where the smallest value is (NumPy's: the first of ties): ints (data, not recorded)."""
        return scans.position(self, "argmin", axis, keepdims)


def reduce(x: VarArray, axis: int | tuple[int, ...] | None, op: str, keepdims: bool = False) -> Any:
    """sum or prod over axes: one array record (sum of an array record), else a pairwise tree of
    scalar records, one block of records per level (depth log2 n)."""
    small = _small.total(OPCODE["add" if op == "sum" else "mul"], x) if axis is None and not keepdims else None
    if small is not None:
        return small
    t = x._live_tape()
    axes = array_records.axes(x.ndim, axis)
    if x._view is not None:
        return wrap_view(t, array_records.reduce(t, op, x._view, axes, keepdims))
    kept = tuple(n for k, n in enumerate(x.shape) if k not in axes)
    idx = np.moveaxis(x._idx, axes, range(x.ndim - len(axes), x.ndim)).reshape(
        *kept, math.prod(x.shape[k] for k in axes))  # not -1: kept may hold a 0
    if idx.shape[-1] == 0:  # as NumPy: the empty sum is 0, the empty product 1 (constants, no inputs)
        kept_shape = idx.shape[:-1]
        rows = t._append_block(CONSTANT, math.prod(kept_shape), values=np.full(math.prod(kept_shape),
                                                                                0.0 if op == "sum" else 1.0))
        idx = rows.reshape(*kept_shape, 1)
    code = OPCODE["add" if op == "sum" else "mul"]
    while idx.shape[-1] > 1:
        pairs = idx.shape[-1] // 2
        left, right = idx[..., 0:2 * pairs:2], idx[..., 1:2 * pairs:2]
        rows = t._append_block(code, left.size, in0=left.ravel(), in1=right.ravel()).reshape(left.shape)
        idx = np.concatenate([rows, idx[..., 2 * pairs:]], axis=-1)
    result = idx[..., 0]
    return wrap(t, result.reshape([1 if k in axes else n for k, n in enumerate(x.shape)]) if keepdims else result)


def matmul(a: Any, b: Any) -> Any:
    """a @ b with NumPy's rules: one matmul record, or for small products of scalar records the
    products and pairwise sums as scalar records."""
    parts = operands(a, b)
    t = None if parts is None else common_tape(parts)
    if parts is None or t is None:
        return NotImplemented
    (ta, pa), (tb, pb) = parts
    sa, sb = shape_of(pa), shape_of(pb)
    if not sa or not sb:
        raise ValueError("matmul: an operand is 0-d (use *)")
    work = math.prod(sa) * (sb[-1] if len(sb) > 1 else 1)
    if isinstance(pa, View) or isinstance(pb, View) or work >= array_records.small() or len(sa) > 2 or len(sb) > 2:
        return wrap_view(t, array_records.matmul(t, as_view(t, ta is not None, pa), as_view(t, tb is not None, pb)))
    A2 = np.reshape(a if ta is not None else pa, (1, -1)) if len(sa) == 1 else (a if ta is not None else pa)
    B2 = np.reshape(b if tb is not None else pb, (-1, 1)) if len(sb) == 1 else (b if tb is not None else pb)
    if A2.shape[1] != B2.shape[0]:
        raise ValueError(f"matmul: inner dimensions differ (shapes {sa} and {sb})")
    product = elementwise(np.multiply, A2.reshape(A2.shape[0], A2.shape[1], 1), B2.reshape(1, *B2.shape))
    total = reduce(product, 1, "sum") if isinstance(product, VarArray) else product
    if len(sa) == 1 and len(sb) == 1:
        return total[0, 0]
    if len(sa) == 1:
        return total[0]
    return total[:, 0] if len(sb) == 1 else total


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: lambda a, axis=None, keepdims=False: a.sum(axis, keepdims),
    np.prod: lambda a, axis=None, keepdims=False: a.prod(axis, keepdims),
    np.mean: lambda a, axis=None, keepdims=False: a.mean(axis, keepdims),
    np.dot: matmul, np.matmul: matmul,
    np.reshape: lambda a, shape: a.reshape(shape),
    np.transpose: lambda a, axes=None: a.transpose() if axes is None else a.transpose(*axes),
    **methods.FUNCTIONS,
    **scans.FUNCTIONS,
    **assign.FUNCTIONS, **linalg.FUNCTIONS,
}
linalg.ARRAY.append(VarArray)

# a Var answers a 0-d array's reshape and indexing (tape/records/handles.py) through a 0-d VarArray of its record
ARRAY_OF.append(lambda x: VarArray(x._seg if x._seg.live else x._live_tape()._segment(), np.array(x._index)))

def _on_zero_d(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A NumPy shape function on a Var as on the 0-d VarArray of its record."""
    return lambda a, *args, **kwargs: fn(ARRAY_OF[0](a), *args, **kwargs) if type(a) is Var else NotImplemented


FUNCTION_HANDLERS.update({fn: _on_zero_d(_FUNCTIONS[fn])
                          for fn in (np.expand_dims, np.broadcast_to, np.repeat, np.tile)})
FUNCTION_HANDLERS[np.ravel] = lambda a, order="C": a.ravel()
