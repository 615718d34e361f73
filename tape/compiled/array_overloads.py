"""What f may do with an array record inside tape.jit (issue 26; views: array_views.py): its shape; + - * / ** (with
array records, numbers, Vars and NumPy arrays, broadcast), unary -, abs and every unary and binary op of the table
(np.<ufunc> or tape.<name>); sum and mean (all elements or one axis); ``@`` (batched too) and np.dot; np.concatenate.
Records and NumPy arrays have one to DIMS (4) axes, np.dot and joins one or two. Each records what the Python
recorder records for the same source (constants first, in operand order). Anything else is a TypingError: tape.jit
then records f as scalar records.
"""

from __future__ import annotations

import operator

import numpy as np
from numba import literal_unroll

from tape.api.trace import logsumexp
from tape.arrays import binary as _binary
from tape.compiled._recorders import ARITHMETIC, UNARY
from tape.compiled.array_records import (
    CUMPROD,
    CUMSUM,
    LOGSUMEXP,
    MATMUL,
    MAX,
    MIN,
    ONES,
    PACK,
    RESULT,
    SORT,
    SUM,
    ZEROS,
    data,
    element,
    whole,
    written,
)
from tape.compiled.array_rows import DIMS
from tape.compiled.arrays import fresh
from tape.compiled.numba_internals import ArrayRecordType, TypingError, make_array_record, types
from tape.compiled.overload_cache import overload, overload_attribute, overload_method
from tape.compiled.recording import is_number, is_var, jit
from tape.kernels.array_ops import ACONSTANT, ARRAY_OPCODE
from tape.records import _recorders as _recorders

NAMES = {"truediv": "div"}  # tape.jit's spelling -> the array op's name


def is_record(typ) -> bool:
    return isinstance(typ, ArrayRecordType)


def is_data(typ) -> bool:
    """A NumPy array of numbers of any axes (an array record's operand: a constant; past DIMS a TypingError)."""
    return isinstance(typ, types.Array) and typ.ndim > 0 and is_number(typ.dtype)


def _ndim(typ) -> int:
    return typ.ndim if is_record(typ) or is_data(typ) else 0


@jit
def view(a, start, shape, strides):
    """A view of array record a (no record): ``start`` elements past a's, of ``shape`` and ``strides``."""
    return make_array_record(a.tape, a.arrays, a.record, a.offset, a.start + start, shape, strides, a.life)


def operand(p, q, x):
    """x as an operand (array_records.OPERAND), recording it first where the Python recorder does: a number as a 0-d
    constant, a Var as a 0-d pack, a NumPy array as a constant of its shape."""


ONE = (-1, 0, 0, 0, *ONES, *ZEROS)  # the operand of a 0-d constant or pack being written


def _fits(typ) -> bool:
    """Whether an array's axes fit an array record's (at most DIMS), else a TypingError: scalar records."""
    if typ.ndim > DIMS:
        raise TypingError(f"tape.jit: array records have at most {DIMS} axes, not {typ.ndim}")
    return True


@overload(operand)
def _operand(p, q, x):
    if is_record(x) and _fits(x):
        pad, ndim = DIMS - x.ndim, x.ndim
        ones, zeros = ONES[:pad], ZEROS[:pad]
        return lambda p, q, x: (x.record, x.offset, x.start, ndim) + ones + x.shape + zeros + x.strides
    if is_var(x):
        return lambda p, q, x: whole(*written(p, q, PACK, x.index, x.c, ONE, ONE)[:2], 0, ONES)
    if is_number(x):
        return lambda p, q, x: whole(*written(p, q, ACONSTANT, 0, float(x), ONE, ONE)[:2], 0, ONES)
    if is_data(x) and _fits(x):
        return lambda p, q, x: data(p, q, x)
    return None


@jit
def _of_first(x, y):
    return x.tape, x.arrays


@jit
def _of_second(x, y):
    return y.tape, y.arrays


def _pointers(x, y):
    """The jitted (x, y) -> (tape, arrays) pointers of the array record among x and y."""
    return _of_first if is_record(x) else _of_second


def maker(ndim: int):
    """RESULT's maker of a record of ndim axes, else a TypingError (past DIMS: scalar records)."""
    if ndim > DIMS:
        raise TypingError(f"tape.jit: array records have at most {DIMS} axes, not {ndim}")
    return RESULT[ndim]


def binary(name: str):
    code = ARRAY_OPCODE[name]

    def typer(x, y):
        if not (is_record(x) or is_record(y)) or not all(
                is_record(v) or is_var(v) or is_number(v) or is_data(v) for v in (x, y)):
            return None
        make, pointers = maker(max(_ndim(x), _ndim(y))), _pointers(x, y)

        def impl(x, y):
            p, q = pointers(x, y)
            a = operand(p, q, x)
            b = operand(p, q, y)
            return make(p, q, written(p, q, code, 2, 0.0, a, b))
        return impl
    return typer


def unary(name: str):
    code = ARRAY_OPCODE[name]

    def typer(x):
        if not is_record(x):
            return None
        make = RESULT[x.ndim]

        def impl(x):
            a = operand(x.tape, x.arrays, x)
            return make(x.tape, x.arrays, written(x.tape, x.arrays, code, 1, 0.0, a, a))
        return impl
    return typer


def _axis(axis) -> bool:
    """Whether ``axis`` is given (an int), not None."""
    if axis is None or isinstance(axis, (types.NoneType, types.Omitted)):
        return False
    if not isinstance(axis, types.Integer):
        raise TypingError(f"tape.jit: an array record's sum (cumsum, sort, ...) takes axis=None or an int, not {axis}")
    return True


@jit
def normalized(axis, ndim):
    """``axis`` as NumPy normalizes it (its AxisError, a ValueError and an IndexError, out of bounds)."""
    if axis < -ndim or axis >= ndim:
        raise np.exceptions.AxisError("axis out of bounds of an array record (tape.jit)")
    return axis + ndim if axis < 0 else axis


def _keeps(keepdims) -> bool:
    """Whether ``keepdims`` is True: a constant (the result's ndim hangs on it), else a TypingError."""
    if keepdims is False or isinstance(keepdims, (types.NoneType, types.Omitted)):
        return bool(getattr(keepdims, "value", False))
    if isinstance(keepdims, types.BooleanLiteral):
        return keepdims.literal_value
    raise TypingError(f"tape.jit: keepdims of an array record's reduction must be a constant True or False, not "
                      f"{keepdims}")


def _count(axis):
    """The number of axes in a tuple of ints ``axis`` (-1: not such a tuple)."""
    ints = isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis.types)
    return len(axis) if ints and len(axis) else -1


@jit
def mask(axes, ndim):
    """The bits of a tuple of axes (NumPy's AxisError out of bounds, its ValueError for an axis repeated)."""
    bits = 0
    for k in literal_unroll(axes):
        bit = 1 << normalized(k, ndim)
        if bits & bit:
            raise ValueError("duplicate value in 'axis' (tape.jit: an array record's reduction)")
        bits |= bit
    return bits


def _reduction(code: int):
    """The typer of a.sum(axis, keepdims) (code SUM; max, min, logsumexp: MAX, MIN, LOGSUMEXP) over all elements, one
    axis or a tuple of them: a Var for all elements, else an array record, of a's ndim with keepdims, as
    tape/records/array_records.py's reduce (one record)."""
    def typer(a, axis=None, keepdims=False):
        if not is_record(a):
            return None
        keep, count = _keeps(keepdims), _count(axis)
        ndim = a.ndim if keep else max(a.ndim - count, 0) if count > 0 else 0 if not _axis(axis) else a.ndim - 1
        make = RESULT[ndim]
        if count > 0:
            def over(a, axis=None, keepdims=False):
                o = operand(a.tape, a.arrays, a)
                return make(a.tape, a.arrays, written(a.tape, a.arrays, code, mask(axis, a.ndim) + 256 * ndim, 0.0,
                                                      o, o))
            return over
        if not _axis(axis):
            def whole_sum(a, axis=None, keepdims=False):
                o = operand(a.tape, a.arrays, a)
                return make(a.tape, a.arrays, written(a.tape, a.arrays, code, 256 * ndim, 0.0, o, o))
            return whole_sum

        def along(a, axis=None, keepdims=False):
            o = operand(a.tape, a.arrays, a)
            return make(a.tape, a.arrays, written(a.tape, a.arrays, code, (1 << normalized(axis, a.ndim)) + 256 * ndim,
                                                  0.0, o, o))
        return along
    return typer


sum_typer = _reduction(SUM)


@jit
def _counted(a, axes):
    """The number of elements a sum over a tuple of axes adds (the axes as ``mask``'s bits)."""
    n, bits = 1, mask(axes, a.ndim)
    for d in range(a.ndim):
        n *= a.shape[d] if bits >> d & 1 else 1
    return n


def mean_typer(a, axis=None, keepdims=False):
    """The sum over axes times 1/n, as tape/arrays/methods.py's mean."""
    if not is_record(a):
        return None
    if _count(axis) > 0:
        return lambda a, axis=None, keepdims=False: np.sum(a, axis, keepdims) * (1.0 / _counted(a, axis))
    if not _axis(axis):
        return lambda a, axis=None, keepdims=False: np.sum(a, None, keepdims) * (1.0 / a.size)
    return lambda a, axis=None, keepdims=False: np.sum(a, axis, keepdims) * (
        1.0 / a.shape[axis + a.ndim if axis < 0 else axis])


@jit
def _size(a):
    size = 1
    for n in a.shape:
        size *= n
    return size


@jit
def inverse(n):
    """1/n, of 0 inf: tape/arrays/methods.py's _inverse (NumPy's answer; no warning inside f)."""
    return 1.0 / n if n > 0 else np.inf


def var_typer(a, axis=None, ddof=0, keepdims=False):
    """The variance over all elements or one axis, recorded as tape/arrays/methods.py's var records it: the mean
    kept, the deviations, their squares summed, times 1/(n - ddof)."""
    if not is_record(a):
        return None
    if not _axis(axis):
        def whole(a, axis=None, ddof=0, keepdims=False):
            d = a - np.sum(a, None, True) * inverse(a.size)
            return np.sum(d * d, None, keepdims) * inverse(max(a.size - ddof, 0))
        return whole

    def along(a, axis=None, ddof=0, keepdims=False):
        n = a.shape[normalized(axis, a.ndim)]
        d = a - np.sum(a, axis, True) * inverse(n)
        return np.sum(d * d, axis, keepdims) * inverse(max(n - ddof, 0))
    return along


def std_typer(a, axis=None, ddof=0, keepdims=False):
    """var ** 0.5, as tape/arrays/methods.py's std."""
    if not is_record(a):
        return None
    return lambda a, axis=None, ddof=0, keepdims=False: np.var(a, axis, ddof, keepdims) ** 0.5


def scalars(a):
    """The elements of array record a as elem records, a Var array of its shape, as the Python recorder's
    VarArray._scalars writes them (C order): for the ops array records lack (prod)."""


@overload(scalars)
def _scalars(a):
    if not is_record(a) or a.ndim > 2:
        return None
    if a.ndim == 1:
        def of_vector(a):
            out = fresh(a.tape, a.shape[0])
            for i in range(a.shape[0]):
                w = element(a.tape, a.arrays, a.record, a.offset, a.start + i * a.strides[0])
                out.rows[i], out.vals[i] = w.index, w.c
            return out
        return of_vector

    def of_matrix(a):
        out = fresh(a.tape, a.shape)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                w = element(a.tape, a.arrays, a.record, a.offset, a.start + i * a.strides[0] + j * a.strides[1])
                out.rows[i, j], out.vals[i, j] = w.index, w.c
        return out
    return of_matrix


def prod_typer(a, axis=None):
    """The product of all elements or along one axis: the elements as elem records, then their pairwise products
    (tape/compiled/reductions.py), as tape/arrays/varray.py's prod records them."""
    if not is_record(a):
        return None
    return lambda a, axis=None: np.prod(scalars(a), axis)


def _flat(axis) -> bool:
    """Whether ``axis`` is None, given or the typer's default (the flattened array's), else an int's (a TypingError
    for anything else)."""
    axis = axis.value if isinstance(axis, types.Omitted) else axis
    return axis is None or not isinstance(axis, int) and not _axis(axis)


def along(code: int, default):
    """The typer of cumsum, cumprod (``default`` None: of the flattened array) and sort (-1: along the last axis) of
    an array record: one record of its shape (of a 1-d view of it, flattened), as tape/arrays/scans.py's."""
    def typer(a, axis=default):
        if not is_record(a):
            return None
        make = RESULT[1 if _flat(axis) else a.ndim]
        if _flat(axis):
            def flat(a, axis=default):
                v = a.reshape(-1)
                o = operand(v.tape, v.arrays, v)
                return make(v.tape, v.arrays, written(v.tape, v.arrays, code, 0, 0.0, o, o))
            return flat

        def impl(a, axis=default):
            o = operand(a.tape, a.arrays, a)
            return make(a.tape, a.arrays, written(a.tape, a.arrays, code, normalized(axis, a.ndim), 0.0, o, o))
        return impl
    return typer


def matmul(most: int):
    """The typer of x @ y of records and NumPy arrays of up to ``most`` axes, batch axes broadcast as NumPy's."""
    def typer(x, y):
        if not (is_record(x) or is_record(y)) or not all(
                (is_record(v) or is_data(v)) and v.ndim <= most for v in (x, y)):
            return None
        ndim = max(x.ndim, y.ndim, 2) - 2 + int(x.ndim > 1) + int(y.ndim > 1)  # (0: a dot of two vectors, a Var)
        make, pointers = maker(ndim), _pointers(x, y)

        def impl(x, y):
            p, q = pointers(x, y)
            a = operand(p, q, x)
            b = operand(p, q, y)
            return make(p, q, written(p, q, MATMUL, ndim, 0.0, a, b))
        return impl
    return typer


def _register() -> None:
    for name, (_, _, _, ufunc) in UNARY.items():
        if name not in ARRAY_OPCODE:
            continue
        own = operator.neg if name == "neg" else abs if name == "abs" else getattr(_recorders, name)
        for fn in (own, getattr(np, ufunc, None) if ufunc else None):
            if fn is not None:
                overload(fn)(unary(name))
    for name, (_, _, _, _, is_operator, ufunc) in ARITHMETIC.items():
        if NAMES.get(name, name) not in ARRAY_OPCODE:
            continue
        own = getattr(operator, name) if is_operator else getattr(_binary, name)
        for fn in (own, getattr(np, ufunc), getattr(operator, f"i{name}", None) if is_operator else None):
            if fn is not None:
                overload(fn)(binary(NAMES.get(name, name)))
    overload(operator.matmul)(matmul(DIMS))
    overload(np.dot)(matmul(2))  # (np.dot of more axes is not matmul)
    overload(np.sum, prefer_literal=True)(sum_typer)
    overload(logsumexp, prefer_literal=True)(_reduction(LOGSUMEXP))  # (an empty view: Unfit, scalar records)
    for fns, name, code in (((np.max, np.amax), "max", MAX), ((np.min, np.amin), "min", MIN)):
        for fn in fns:
            overload(fn, prefer_literal=True)(_reduction(code))
        overload_method(ArrayRecordType, name, prefer_literal=True)(_reduction(code))
    for name, code, default in (("cumsum", CUMSUM, None), ("cumprod", CUMPROD, None), ("sort", SORT, -1)):
        overload(getattr(np, name))(along(code, default))
        if name != "sort":  # (ndarray.sort sorts in place)
            overload_method(ArrayRecordType, name)(along(code, default))
    overload(np.mean, prefer_literal=True)(mean_typer)
    overload(np.prod)(prod_typer)
    overload_method(ArrayRecordType, "prod")(prod_typer)
    for name, typer in (("var", var_typer), ("std", std_typer)):
        overload(getattr(np, name), prefer_literal=True)(typer)
        overload_method(ArrayRecordType, name, prefer_literal=True)(typer)
    overload_method(ArrayRecordType, "sum", prefer_literal=True)(sum_typer)
    overload_method(ArrayRecordType, "mean", prefer_literal=True)(mean_typer)
    overload_attribute(ArrayRecordType, "ndim")(lambda a: lambda a: len(a.shape))
    overload_attribute(ArrayRecordType, "size")(lambda a: lambda a: _size(a))
    overload(len)(lambda a: (lambda a: a.shape[0]) if is_record(a) else None)


_register()
