"""Arrays of Vars inside tape.jit functions: the inputs ``xs`` and arrays made like them.

A Var array (numba_internals.VarArrayType, 1-d or 2-d) is two NumPy arrays of one shape: per
element its record index, or NUMBER (-1: a number not recorded, as a float meeting a Var stays
one) or UNWRITTEN (-2: np.empty's, an error when read), and its value. Views, slices, reshapes,
copies and swaps are NumPy's on the two arrays, so they record nothing. ``np.empty/zeros/ones/full``
with ``dtype=xs.dtype`` (and ``*_like`` of a Var array) make one. Whole-array arithmetic, ufuncs,
``sum``/``prod``/``mean`` (pairwise, as tape/arrays/varray.py's reduce), ``max``/``min`` and
``np.dot`` record one scalar record per element operation, in the order the Python recorder writes
them on a small VarArray (C order; reductions level by level).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numba import njit

from tape.compiled._recorders import ARITHMETIC
from tape.compiled.numba_internals import (
    TypingError,
    VarArrayType,
    make_array,
    make_block,
    make_dtype,
    make_var,
    types,
    unbound,
)
from tape.compiled.numba_payload import arena_room, carve, give_back, tape_from_pointer, want
from tape.compiled.overload_cache import overload, overload_attribute, overload_method
from tape.compiled.packing import sized
from tape.compiled.recording import INTERNAL, constant_record, hot, is_number, is_var, jit, var_of

NUMBER, UNWRITTEN = -1, -2  # an element's record index when it holds a number / was never written
add_vv, mul_vv, maximum_vv, minimum_vv = (ARITHMETIC[name][0] for name in ("add", "mul", "maximum", "minimum"))


def is_array(typ) -> bool:
    return isinstance(typ, VarArrayType)


def is_data(typ) -> bool:
    """A NumPy array of numbers, 1-d or 2-d (an operand of Var-array arithmetic)."""
    return isinstance(typ, types.Array) and typ.ndim in (1, 2) and is_number(typ.dtype)


def _on_array(body):
    """The typer of a function of one Var array (an attribute, a method, a reduction): body."""
    def typer(a):
        return body if is_array(a) else None
    return typer


@hot
def element(p, r, v):
    """The Var of an element (record r, value v; a number for r = NUMBER)."""
    if r < NUMBER:
        raise ValueError("tape.jit: an element of a Var array is read before anything was written to it "
                         "(np.empty); write it first, or make the array with np.zeros")
    return make_var(p, r, v)


@hot
def place(i, n):
    """Index i of an axis of length n, negative from the end; IndexError outside."""
    k = i + n if i < 0 else i
    if k < 0 or k >= n:
        raise IndexError("tape.jit: index out of range of a Var array")
    return k


def _parts(i: Any) -> tuple:
    """The types of an index: of each member of a tuple, or the one."""
    return tuple(getattr(i, "types", ())) if isinstance(i, types.BaseTuple) else (i,)


def _integers(i: Any, count: int) -> bool:
    """An index of ``count`` integers."""
    parts = _parts(i)
    return len(parts) == count and all(isinstance(k, types.Integer) for k in parts)


def _view_index(i: Any) -> bool:
    """An index NumPy answers with a view or a copy of elements: ints, slices, an int array."""
    parts = _parts(i)
    return all(isinstance(k, (types.Integer, types.SliceType)) or (isinstance(k, types.Array) and isinstance(
        k.dtype, types.Integer)) for k in parts)


FANCY = ("tape.jit: index a Var array with integers, slices or integer arrays, not with {} (a recorded value "
         "as an index has no derivative; read its value after the call)")


@overload(operator.getitem)
def _getitem(a, i):
    if not is_array(a):
        return None
    if a.ndim == 1 and _integers(i, 1):
        def one(a, i):
            k = place(i, a.rows.shape[0])
            return element(a.tape, a.rows[k], a.vals[k])
        return one
    if a.ndim == 2 and _integers(i, 2):
        def two(a, i):
            j, k = place(i[0], a.rows.shape[0]), place(i[1], a.rows.shape[1])
            return element(a.tape, a.rows[j, k], a.vals[j, k])
        return two
    if _view_index(i) and any(isinstance(k, types.Array) for k in _parts(i)):  # NumPy's copy, freed after its use
        return lambda a, i: copied(a.tape, a.rows[i], a.vals[i])
    if _view_index(i):
        return lambda a, i: make_array(a.tape, a.rows[i], a.vals[i])
    raise TypingError(FANCY.format(i))


@overload(operator.setitem)
def _setitem(a, i, v):
    if not is_array(a):
        return None
    if not (is_var(v) or is_number(v) or is_array(v)):
        raise TypingError(f"tape.jit: a Var array holds Vars and numbers, not {v}")
    if a.ndim == 1 and _integers(i, 1) and not is_array(v):
        def one(a, i, v):
            k, w = place(i, a.rows.shape[0]), var_of(v)
            a.rows[k], a.vals[k] = w.index, w.c
        return one
    if a.ndim == 2 and _integers(i, 2) and not is_array(v):
        def two(a, i, v):
            j, k, w = place(i[0], a.rows.shape[0]), place(i[1], a.rows.shape[1]), var_of(v)
            a.rows[j, k], a.vals[j, k] = w.index, w.c
        return two
    if not _view_index(i):
        raise TypingError(FANCY.format(i))
    if is_array(v):
        def arrays(a, i, v):
            a.rows[i], a.vals[i] = v.rows, v.vals
        return arrays

    def spread(a, i, v):  # a[1:3] = v: every element
        w = var_of(v)
        a.rows[i], a.vals[i] = w.index, w.c
    return spread


@overload(len)
def _len(a):
    return (lambda a: a.rows.shape[0]) if is_array(a) else None


for _name, _impl in (("shape", lambda a: a.rows.shape), ("size", lambda a: a.rows.size),
                     ("ndim", lambda a: a.rows.ndim), ("dtype", lambda a: make_dtype(a.tape)),  # type: ignore[call-arg]
                     ("T", lambda a: make_array(a.tape, a.rows.T, a.vals.T))):  # type: ignore[call-arg]
    overload_attribute(VarArrayType, _name)(_on_array(_impl))


@overload_method(VarArrayType, "copy")
def _copy(a):
    return lambda a: copied(a.tape, a.rows, a.vals)


@overload_method(VarArrayType, "ravel")
def _ravel(a):
    def ravel(a):
        out = fresh(a.tape, a.rows.size)
        flat_into(out.rows, out.vals, a)
        return out
    return ravel


# --- elementwise: operands seen as 2-d (a 1-d one as a row), broadcast as NumPy does -----------------------


def at(x, i, j):
    """Element (i, j) of an operand seen as 2-d (a 1-d one as a row; a Var or number everywhere): a Var. Callers
    broadcast by passing 0 along an axis of length 1 (no branch per element)."""


@overload(at)
def _at(x, i, j):
    if is_array(x) and x.ndim == 1:
        return lambda x, i, j: element(x.tape, x.rows[j], x.vals[j])
    if is_array(x):
        return lambda x, i, j: element(x.tape, x.rows[i, j], x.vals[i, j])
    if is_data(x) and x.ndim == 1:
        return lambda x, i, j: unbound(x[j])
    if is_data(x):
        return lambda x, i, j: unbound(x[i, j])
    if is_var(x):
        return lambda x, i, j: x
    if is_number(x):
        return lambda x, i, j: unbound(x)
    return None


def dims(x):
    """(rows, columns) of an operand seen as 2-d: a 1-d one is one row, a Var or number 1 x 1."""


@overload(dims)
def _dims(x):
    if (is_array(x) or is_data(x)) and x.ndim == 1:
        return lambda x: (1, len(x))
    if is_array(x) or is_data(x):
        return lambda x: (x.shape[0], x.shape[1])
    return lambda x: (1, 1)


@hot
def common(a, b):
    """The broadcast length of two axes."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("tape.jit: operands could not be broadcast together")


@njit(cache=True, forceinline=False, **INTERNAL)
def spill(p, count):
    """``count`` elements where the arena is full: from a new arena (twice the last, at least count), the
    old one kept (the tape's ``kept``) as long as the call, as Var arrays borrow their elements. Out of line, said
    outright: first called from take (inlined), it inherited forceinline (Numba's ConfigStack) and was inlined into
    every Var array made (n-body's f 14,499 -> 11,406 lines of LLVM IR for its driver's O3)."""
    t = tape_from_pointer(p)
    t.arena = np.empty(max(count, 2 * t.arena.size, 4096), np.int64)
    t.kept.append(t.arena)
    t.used = 0
    return carve(p, count)


@hot
def take(p, count):
    """The address of ``count`` int64 elements for a new Var array: from the call's arena (no allocation, no reference
    counts: ``y = y + xs`` of 2 elements 94-116 -> 23-46 ns/record, docs/benchmarks.md), or from a new
    one where it is full."""
    want(p, count)
    used, room = arena_room(p)
    if used + count <= room:
        return carve(p, count)
    return spill(p, count)


@hot
def release(p, count):
    """Give back the last ``count`` elements taken (scratch of a reduction)."""
    want(p, -count)
    give_back(p, count)


@hot
def size(n, m):
    """n * m elements, n and m not negative."""
    if n < 0 or m < 0:
        raise ValueError("tape.jit: negative dimensions are not allowed")
    return n * m


@hot
def blank(p, n, m):
    """A new 2-d Var array: its rows and values in one block."""
    return make_block(p, take(p, 2 * sized(p, size(n, m))), (n, m))


@hot
def blank_row(p, n, m):
    """A new 1-d Var array of m elements (n is 1), in one block."""
    return make_block(p, take(p, 2 * sized(p, size(n, m))), (m,))


@hot
def axis_of(axis, ndim):
    """An axis of ndim, negative from the end; ValueError outside."""
    k = axis + ndim if axis < 0 else axis
    if k < 0 or k >= ndim:
        raise ValueError("tape.jit: axis out of range of a Var array")
    return k


@hot
def put(out, i, j, w):
    out.rows[i, j], out.vals[i, j] = w.index, w.c


@hot
def put_row(out, i, j, w):
    out.rows[j], out.vals[j] = w.index, w.c


def fresh(p, shape):
    """A new Var array of that shape (an int, a tuple of one or two) from the arena, nothing written."""


@overload(fresh)
def _fresh(p, shape):
    if isinstance(shape, types.Integer):
        return lambda p, shape: blank_row(p, 1, shape)
    if isinstance(shape, types.BaseTuple) and len(shape) == 1:
        return lambda p, shape: blank_row(p, 1, shape[0])
    if isinstance(shape, types.BaseTuple) and len(shape) == 2:
        return lambda p, shape: blank(p, shape[0], shape[1])
    raise TypingError(f"tape.jit: Var arrays are 1-d or 2-d, not of shape {shape}")


def fill(rows, vals, r, v):
    """``rows[...], vals[...] = r, v`` (arrays of their shape, or numbers) by a loop: Numba's slice assignment
    compiles for seconds at every use (``xs.copy()`` by it: a first call 1.8 -> 6.1 s)."""


@overload(fill)
def _fill(rows, vals, r, v):
    arrays = isinstance(r, types.Array)
    if rows.ndim == 1 and arrays:
        def copy1(rows, vals, r, v):
            for i in range(rows.shape[0]):
                rows[i], vals[i] = r[i], v[i]
        return copy1
    if rows.ndim == 1:
        def set1(rows, vals, r, v):
            for i in range(rows.shape[0]):
                rows[i], vals[i] = r, v
        return set1
    if arrays:
        def copy2(rows, vals, r, v):
            for i in range(rows.shape[0]):
                for j in range(rows.shape[1]):
                    rows[i, j], vals[i, j] = r[i, j], v[i, j]
        return copy2

    def set2(rows, vals, r, v):
        for i in range(rows.shape[0]):
            for j in range(rows.shape[1]):
                rows[i, j], vals[i, j] = r, v
    return set2


def flat_into(rows, vals, a):
    """a's elements in C order into 1-d arrays rows and vals."""


@overload(flat_into)
def _flat_into(rows, vals, a):
    if a.ndim == 1:
        def one(rows, vals, a):  # a loop, not a call of fill: one compile where there were two
            for i in range(a.rows.shape[0]):
                rows[i], vals[i] = a.rows[i], a.vals[i]
        return one

    def two(rows, vals, a):  # by index: fill of each row's slices compiled 0.15 CPU-s (n-body's sum), this 0.05
        m = a.rows.shape[1]
        for i in range(a.rows.shape[0]):
            for j in range(m):
                rows[i * m + j], vals[i * m + j] = a.rows[i, j], a.vals[i, j]
    return two


@jit
def copied(p, rows, vals):
    """A Var array's rows and vals (or NumPy's temporary copy of them) copied into the arena, C-contiguous."""
    out = fresh(p, rows.shape)
    fill(out.rows, out.vals, rows, vals)
    return out


def _result(ndim: int):
    """(make, put) of a result of ndim axes, computed as 2-d (a 1-d one as one row)."""
    return (blank_row, put_row) if ndim == 1 else (blank, put)


def _ndim(*operands) -> int:
    return max(x.ndim if is_array(x) or is_data(x) else 0 for x in operands)


def records_of(x, p):
    """An operand as records: numbers and NumPy arrays as constant records (a Var array of them), as
    the Python recorder writes them for an op without a const op (arctan2), before its records."""


@overload(records_of)
def _records_of(x, p):
    if is_data(x):
        def constants(x, p):
            out, values = fresh(p, x.shape), x.copy().reshape(-1)
            rows, vals = out.rows.reshape(-1), out.vals.reshape(-1)
            for k in range(values.size):
                w = constant_record(p, float(values[k]))
                rows[k], vals[k] = w.index, w.c
            return out
        return constants
    if is_number(x) or is_var(x):
        return lambda x, p: var_of(x) if var_of(x).index >= 0 else constant_record(p, float(var_of(x).c))
    return lambda x, p: x


def operand(typ) -> bool:
    """A Var array, a NumPy array of numbers, a Var or a number."""
    return is_array(typ) or is_data(typ) or is_var(typ) or is_number(typ)


def of_arrays(x, y) -> bool:
    """Operands of an op giving a Var array: a Var array and another operand, or a NumPy array and a Var."""
    arrays = [v for v in (x, y) if is_array(v) or is_data(v)]
    return operand(x) and operand(y) and (any(map(is_array, arrays)) or bool(arrays) and (is_var(x) or is_var(y)))


tape_of_first, tape_of_second = hot(lambda x, y: x.tape), hot(lambda x, y: y.tape)  # x's, y's (types differ)


def tape_of_pair(x, y):
    """A jitted function of (x, y): the tape of x if it is a Var array (or a Var beside no Var array), else y's. One
    of two, shared: a new one per overload was a compile each (n-body: 6 where 4 argument types are)."""
    return tape_of_first if is_array(x) or (is_var(x) and not is_array(y)) else tape_of_second


def binary_array(vv, constants: bool = False):
    """The overload of an arithmetic spelling on Var arrays (with Vars, numbers, NumPy arrays): vv
    (Var <op> Var, numbers as unrecorded Vars) per element of the broadcast shape. ``constants``: the
    op has no const op, so numbers become constant records first (records_of)."""
    def typer(x, y):
        if not of_arrays(x, y):
            return None
        make, store = _result(_ndim(x, y))
        tape_of = tape_of_pair(x, y)

        def impl(x, y):
            p = tape_of(x, y)
            (a, b), (c, d) = dims(x), dims(y)
            n, m = common(a, c), common(b, d)
            out = make(p, n, m)
            xi, xj, yi, yj = int(a != 1), int(b != 1), int(c != 1), int(d != 1)  # 0: broadcast along that axis
            for i in range(n):
                for j in range(m):
                    store(out, i, j, vv(at(x, i * xi, j * xj), at(y, i * yi, j * yj)))
            return out

        if not constants:
            return impl
        whole = hot(impl)
        return lambda x, y: whole(records_of(x, tape_of(x, y)), records_of(y, tape_of(x, y)))
    return typer


def inplace_array(fn, vv):
    """``a += b`` of a Var array: ``fn(a, b)`` (the operator) written into a's elements, NumPy's in-place
    semantics (views of a see it)."""
    def typer(x, y):
        if not is_array(x) or binary_array(vv)(x, y) is None:
            return None

        def inplace(x, y):
            out = fn(x, y)
            if out.rows.shape != x.rows.shape:
                raise ValueError("tape.jit: operands could not be broadcast together (in place)")
            fill(x.rows, x.vals, out.rows, out.vals)
            return x
        return inplace
    return typer


def unary_array(of_var):
    """The overload of a unary op on a Var array: of_var per element."""
    def typer(x):
        if not is_array(x):
            return None
        make, store = _result(x.ndim)

        def impl(x):
            n, m = dims(x)
            out = make(x.tape, n, m)
            for i in range(n):
                for j in range(m):
                    store(out, i, j, of_var(at(x, i, j)))
            return out
        return impl
    return typer


@jit
def array_output(a):
    """A Var array f returns, as the driver reports outputs: (indices, values, shape) in C order, each
    number a constant record (as in a VarArray); elements never written are an error."""
    rows, vals = a.rows.copy().reshape(-1), a.vals.copy().reshape(-1)
    for k in range(rows.size):
        if rows[k] < NUMBER:
            raise ValueError("tape.jit: f returns a Var array with elements never written (np.empty)")
        if rows[k] == NUMBER:
            rows[k] = constant_record(a.tape, vals[k]).index
    return rows, vals, np.array(a.rows.shape, np.int64)
