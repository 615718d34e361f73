"""VarArray: NumPy-style arrays of records, recorded a whole block per operation.

A VarArray is an array of record indices on one tape. Indexing, slicing,
reshaping and transposing act on the indices and record nothing; every
arithmetic operation broadcasts its operands as NumPy does and appends one
ordinary scalar record per element with vectorized writes, then lets the
Numba forward sweep compute the new values. So every sweep (replay, reverse,
JVP, HVP, maps) works on the result unchanged.
"""

from __future__ import annotations

import numbers
import sys
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import numpy as np

from tape._handles import Condition, surviving, warn_value_in_trace
from tape._recorders import Var
from tape._storage import NO_INPUT, Segment, Storage
from tape.errors import ForeignHandleError, StaleHandleError
from tape.kernels.ops import ARITHMETIC, COMPARISONS, OPCODE, UNARY_UFUNCS

if TYPE_CHECKING:
    from tape._tape import Tape

Operand: TypeAlias = "VarArray | Var | float | np.ndarray"  # what arithmetic with a VarArray takes

_BINARY = {getattr(np, s.ufunc): s for s in ARITHMETIC}  # numpy ufunc -> how it is recorded
_COMPARE = {getattr(np, s.ufunc): s for s in COMPARISONS}
_UNARY = {getattr(np, ufunc): OPCODE[name] for name, ufunc in UNARY_UFUNCS.items()}


def operand(x):
    """(tape, record indices) for Vars and VarArrays, (None, float array) for numbers, else None."""
    if type(x) is VarArray:
        return x._live_tape(), x._idx
    if type(x) is Var:
        return x._live_tape(), np.array(x._index)
    if isinstance(x, (numbers.Real, np.ndarray, list, tuple)) and not isinstance(x, bool | np.bool_):
        array = np.asarray(x)
        if array.dtype.kind in "fiub":
            return None, array.astype(np.float64)
    return None


def operands(*xs):
    """Operands, their common tape, and their broadcast shapes (NumPy's error, with the shapes, if none)."""
    parts = [operand(x) for x in xs]
    if any(p is None for p in parts):
        return None
    tapes = {id(t): t for t, _ in parts if t is not None}
    if len(tapes) > 1:
        raise ForeignHandleError("cannot combine arrays recorded on different tapes")
    try:
        arrays = np.broadcast_arrays(*(a for _, a in parts))
    except ValueError as exc:
        shapes = " and ".join(str(np.shape(a)) for _, a in parts)
        raise ValueError(f"{exc} (shapes {shapes})") from None
    return next(iter(tapes.values()), None), [t is not None for t, _ in parts], arrays


def wrap(t: Storage, rows: np.ndarray):
    """Records as a VarArray, or a Var for a single 0-d record."""
    if rows.ndim == 0:
        return Var._at(t._segment(), int(rows))
    return VarArray(t._segment(), rows)


def elementwise(ufunc, *inputs):
    """Record ``ufunc`` over broadcast operands; NotImplemented for operands it cannot take."""
    found = operands(*inputs)
    if found is None or found[0] is None:
        return NotImplemented
    t, recorded, arrays = found
    shape = arrays[0].shape
    if ufunc in _UNARY:
        rows = t._append_block(_UNARY[ufunc], arrays[0].size, in0=arrays[0].ravel())
    elif recorded == [True, True]:
        rows = t._append_block(OPCODE[_BINARY[ufunc].pair], arrays[0].size, in0=arrays[0].ravel(),
                               in1=arrays[1].ravel())
    elif recorded[0]:
        consts = -arrays[1] if _BINARY[ufunc].negate else arrays[1]
        rows = t._append_block(OPCODE[_BINARY[ufunc].var_c], arrays[0].size, in0=arrays[0].ravel(),
                               consts=consts.ravel())
    else:
        rows = t._append_block(OPCODE[_BINARY[ufunc].c_var], arrays[1].size, in0=arrays[1].ravel(),
                               consts=arrays[0].ravel())
    return wrap(t, rows.reshape(shape))


class VarArray:
    """An n-d array of tape records (any shape); NumPy semantics, one record per element per op."""

    __slots__ = ("_seg", "_idx")
    __array_priority__ = 1000

    def __init__(self, seg: Segment, idx: np.ndarray):
        self._seg, self._idx = seg, idx

    # -- shape and views (no records) ---------------------------------------------------

    shape = property(lambda self: self._idx.shape)
    ndim = property(lambda self: self._idx.ndim)
    size = property(lambda self: self._idx.size)

    def __len__(self) -> int:
        return len(self._idx)

    @property
    def tape(self) -> Tape:
        """The tape these records are on."""
        return self._seg.tape  # type: ignore[return-value]  # a Tape: only tape.Tape makes records

    def _live_tape(self) -> Storage:
        if not self._seg.live:
            self._seg = surviving(self._seg, int(self._idx.max(initial=-1)), "records of this array were")
        return self._seg.tape

    def __getitem__(self, key):
        if isinstance(key, (VarArray, Var, ArrayCondition, Condition)) or (
                isinstance(key, tuple) and any(isinstance(k, (VarArray, Var, ArrayCondition)) for k in key)):
            raise TypeError("index a VarArray with integers, slices or NumPy arrays, not with recorded values")
        t = self._live_tape()
        return wrap(t, np.asarray(self._idx[key]))

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def reshape(self, *shape) -> VarArray:
        return VarArray(self._seg, self._idx.reshape(*shape))

    def transpose(self, *axes) -> VarArray:
        return VarArray(self._seg, self._idx.transpose(*axes))

    T = property(lambda self: self.transpose())

    def ravel(self) -> VarArray:
        return VarArray(self._seg, self._idx.ravel())

    # -- values ---------------------------------------------------------------------------

    @property
    def value(self) -> np.ndarray:
        """The records' values, shaped like the array (inside tape.trace: kept by every replay, with a warning)."""
        t = self._live_tape()
        if t._tracing:
            warn_value_in_trace()
        return t._val[self._idx]

    @property
    def grad(self) -> np.ndarray:
        """Adjoints of the last backward pass, shaped like the array (0 where it did not reach)."""
        return self._live_tape()._grads(self._idx.ravel()).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a tape.VarArray is not converted to numbers silently: use .value")

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a tape.VarArray is not defined; compare it and use .all() or .any()")

    def __repr__(self) -> str:
        try:
            values = np.array2string(self._live_tape()._val[self._idx], threshold=8, precision=4)
        except StaleHandleError:
            values = "stale"
        return f"VarArray(shape={self.shape}, value={values})"

    # -- arithmetic -------------------------------------------------------------------------

    def _unary(self, code: int) -> VarArray:
        """Record unary op ``code`` on every element (tape.sigmoid(X), tape.relu(X), ...)."""
        t = self._live_tape()
        return VarArray(t._segment(), t._append_block(code, self.size, in0=self._idx.ravel()).reshape(self.shape))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise TypeError(f"numpy.{ufunc.__name__}.{method} with {sorted(kwargs)} is not supported on VarArray")
        if ufunc in _UNARY or ufunc in _BINARY:
            return elementwise(ufunc, *inputs)
        if ufunc is np.matmul:
            return matmul(*inputs)
        if ufunc in _COMPARE:
            return ArrayCondition.of(ufunc, *inputs)
        raise TypeError(f"numpy.{ufunc.__name__} is not supported on tape.VarArray (no recorded rule)")

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
    def __pos__(self) -> VarArray: return self

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

    # -- reductions: pairwise trees, depth log2(n) ---------------------------------------------

    # the whole array reduces to a Var; along an axis, to a VarArray (a Var for 1-d arrays)
    @overload
    def sum(self, axis: None = None) -> Var: ...
    @overload
    def sum(self, axis: int) -> Any: ...
    def sum(self, axis: int | None = None) -> Any:
        return reduce(self, axis, "add")

    @overload
    def prod(self, axis: None = None) -> Var: ...
    @overload
    def prod(self, axis: int) -> Any: ...
    def prod(self, axis: int | None = None) -> Any:
        return reduce(self, axis, "mul")

    @overload
    def mean(self, axis: None = None) -> Var: ...
    @overload
    def mean(self, axis: int) -> Any: ...
    def mean(self, axis: int | None = None) -> Any:
        count = self.size if axis is None else self.shape[axis]
        return reduce(self, axis, "add") * (1.0 / count)

    def dot(self, other: VarArray | np.ndarray) -> Any:
        return matmul(self, other)


def reduce(x: VarArray, axis: int | None, op: str):
    """Pairwise tree over an axis (all of them for None): one block of records per level."""
    t = x._live_tape()
    idx = x._idx.ravel() if axis is None else np.moveaxis(x._idx, axis, -1)
    if idx.shape[-1] == 0:
        raise ValueError("cannot reduce an empty VarArray")
    code = OPCODE[op]
    while idx.shape[-1] > 1:
        pairs = idx.shape[-1] // 2
        left, right = idx[..., 0:2 * pairs:2], idx[..., 1:2 * pairs:2]
        rows = t._append_block(code, left.size, in0=left.ravel(), in1=right.ravel()).reshape(left.shape)
        idx = np.concatenate([rows, idx[..., 2 * pairs:]], axis=-1)
    return wrap(t, idx[..., 0])


def matmul(a, b):
    """a @ b for VarArrays and NumPy arrays (1-D or 2-D): products, then pairwise sums."""
    a_is, b_is = isinstance(a, VarArray), isinstance(b, VarArray)
    A = a if a_is else np.asarray(a, dtype=np.float64)
    B = b if b_is else np.asarray(b, dtype=np.float64)
    if A.ndim not in (1, 2) or B.ndim not in (1, 2):
        raise ValueError(f"matmul of VarArrays takes 1-D or 2-D operands, got shapes {A.shape} and {B.shape}")
    A2 = A.reshape(1, -1) if A.ndim == 1 else A
    B2 = B.reshape(-1, 1) if B.ndim == 1 else B
    if A2.shape[1] != B2.shape[0]:
        raise ValueError(f"matmul: inner dimensions differ (shapes {A.shape} and {B.shape})")
    left = A2.reshape(A2.shape[0], A2.shape[1], 1)
    right = B2.reshape(1, B2.shape[0], B2.shape[1])
    product = elementwise(np.multiply, left, right)
    total = reduce(product, 1, "add") if isinstance(product, VarArray) else product
    if A.ndim == 1 and B.ndim == 1:
        return total[0, 0]
    if A.ndim == 1:
        return total[0]
    if B.ndim == 1:
        return total[:, 0]
    return total


class ArrayCondition:
    """An elementwise comparison of arrays of records: data for tape.where, or checked
    branches when turned into Python or NumPy booleans (bool, .all(), .any(), np.asarray)."""

    __slots__ = ("_code", "_seg", "_in0", "_in1", "_consts")

    def __init__(self, code: int, t: Storage, in0: np.ndarray, in1: np.ndarray | None, consts: np.ndarray | None):
        self._code, self._seg, self._in0, self._in1, self._consts = code, t._segment(), in0, in1, consts

    def _live_tape(self) -> Storage:
        """The tape, after checking that the compared records survived every rewind since."""
        if not self._seg.live:
            highest = max(int(self._in0.max(initial=-1)), -1 if self._in1 is None else int(self._in1.max(initial=-1)))
            self._seg = surviving(self._seg, highest, "records this comparison reads were")
        return self._seg.tape

    @classmethod
    def of(cls, ufunc, x, y):
        found = operands(x, y)
        if found is None or found[0] is None:
            return NotImplemented
        t, recorded, (a, b) = found
        spelling = _COMPARE[ufunc]
        if recorded == [True, True]:
            swap = spelling.swap
            return cls(OPCODE[spelling.pair], t, b if swap else a, a if swap else b, None)
        if recorded[0]:
            return cls(OPCODE[spelling.var_c], t, a, None, b)
        return cls(OPCODE[spelling.c_var], t, b, None, a)

    shape = property(lambda self: self._in0.shape)

    def _rows(self) -> tuple[int, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(opcode, in0, in1, consts) of the comparison records, flattened."""
        consts = None if self._consts is None else self._consts.ravel()
        in1 = None if self._in1 is None else self._in1.ravel()
        return self._code, self._in0.ravel(), in1, consts

    def _check(self) -> np.ndarray:
        """Record every comparison as a checked branch; return the outcomes."""
        code, in0, in1, consts = self._rows()
        t = self._live_tape()
        rows = t._append_block(code, in0.size, in0=in0, in1=NO_INPUT if in1 is None else in1,
                                        consts=consts)
        outcomes = t._val[rows] != 0.0
        caller = sys._getframe(2)
        where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
        t._checks.extend(zip(rows.tolist(), outcomes.tolist(), [where] * len(rows), strict=True))
        return outcomes.reshape(self.shape)

    def all(self) -> bool:
        return bool(self._check().all())

    def any(self) -> bool:
        return bool(self._check().any())

    def __bool__(self) -> bool:
        if self._in0.size != 1:
            raise ValueError("the truth value of an array comparison with more than one element is ambiguous; "
                             "use .all() or .any()")
        return bool(self._check().all())

    def __array__(self, dtype=None, copy=None):
        return self._check() if dtype is None else self._check().astype(dtype)


def _join(arrays, axis: int, join, name: str) -> VarArray:
    parts = [operand(a) for a in arrays]
    tapes = {id(t): t for t, _ in parts if t is not None}
    if len(tapes) != 1 or any(t is None for t, _ in parts):
        raise TypeError(f"tape.{name} joins VarArrays of one tape (make numbers records with Tape.array)")
    t = next(iter(tapes.values()))
    return VarArray(t._segment(), join([idx for _, idx in parts], axis=axis))


def concatenate(arrays, axis: int = 0) -> VarArray:
    """Join VarArrays of one tape along an existing axis (records nothing)."""
    return _join(arrays, axis, np.concatenate, "concatenate")


def stack(arrays, axis: int = 0) -> VarArray:
    """Join VarArrays of one tape along a new axis (records nothing)."""
    return _join(arrays, axis, np.stack, "stack")


_FUNCTIONS = {
    np.sum: lambda a, axis=None: a.sum(axis),
    np.prod: lambda a, axis=None: a.prod(axis),
    np.mean: lambda a, axis=None: a.mean(axis),
    np.dot: matmul,
    np.matmul: matmul,
    np.concatenate: concatenate,
    np.stack: stack,
    np.reshape: lambda a, shape: a.reshape(shape),
    np.transpose: lambda a, axes=None: a.transpose() if axes is None else a.transpose(*axes),
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
    np.size: lambda a: a.size,
}
