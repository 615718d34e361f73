"""Array records written from jitted code: one record per array operation, as tape/records/array_records.py writes it.

An array record inside f (numba_internals.ArrayRecordType) is its record, the offset of its region and its shape;
the array side of the call (ArraysType) holds the new plans as rows of PLAN_WIDTH numbers, the value arena and
scratch. A record is a row of the record table (its in0 the plan's place), a plan row and a region at the arena's
top; its values are the compiled array driver's (kernels/_array_driver.py ``forward``, NumPy's own loops and BLAS by
address, NumPy's bits) on a one-row table written as tape/sweeps/encoding.py writes it, called through one C
function by symbol (not linked into f). After the call ``adopt`` makes the plan rows the tape's Plans.

Operands an op cannot give NumPy's bits for (a matmul of an operand with itself, a dot of two vectors, a sum past
encoding.LARGE, BLAS not found) raise ``Unfit``: tape.jit records the call again as scalar records.
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray, cfunc

from tape.compiled.numba_internals import ArrayRecordType, address, arrays_type, make_array_record, new_struct, types
from tape.compiled.numba_payload import arrays_from_pointer, external
from tape.compiled.recording import OPTIONS, jit, push
from tape.kernels import _array_driver as kernels
from tape.kernels import array_kernels
from tape.kernels._array_driver import (
    BASE,
    KIND,
    NIN,
    OP,
    OUT,
    OUT_STRIDES,
    REC,
    ROW,
    SHAPE,
    SIZE,
    STRIDES,
    VIEW,
    VIEWS,
    WIDTH,
)
from tape.kernels.array_ops import ACONSTANT, ARRAY_OPCODE
from tape.kernels.ops import ELEM
from tape.records.storage import NO_INPUT
from tape.sweeps import encoding
from tape.sweeps.driver import Plan, View

PLAN_WIDTH = 28  # a plan row: code, row, offset, ndim, shape (2, right-aligned), inputs, 2 views of 7 (record,
V0, AXES, PLACE, WIDE = 7, 21, 24, 25  # offset, ndim, shape, strides), axes (count, 2), pack's row, wide (count, 2)
PACK, SUM, MATMUL = ARRAY_OPCODE["pack"], ARRAY_OPCODE["sum"], ARRAY_OPCODE["matmul"]
_NO_PLACES = np.zeros(0, np.int64)
_NO_PLACES.flags.writeable = False


class Unfit(Exception):
    """Operands whose values the driver's rows do not give as NumPy does: the call is recorded as scalar records."""


def _forward_c(table, rows, aval, size, scratch, columns):
    try:
        kernels.forward(carray(table, (rows, WIDTH), np.int64), carray(aval, (size,), np.float64),
                        carray(scratch, (4, columns), np.float64))
    except Exception:  # noqa: BLE001  # a scratch row too short: reported by the caller
        return 1
    return 0


_SIGNATURE = types.int64(types.voidptr, types.int64, types.voidptr, types.int64, types.voidptr, types.int64)
FORWARD = types.ExternalFunction("tape_jit_array_forward", _SIGNATURE)
_installed: list = []


def install() -> None:
    """Give jitted code the driver's forward by symbol (compiled, or loaded from the cache, once per process)."""
    if not _installed:
        array_kernels.make(array_kernels.forwards(kernels.SUM, kernels.MATMUL))  # (the kernels its rows call)
        compiled = cfunc(_SIGNATURE, cache=True, **OPTIONS)(_forward_c)
        assert compiled.address, "Numba made a C function at address 0"
        external("tape_jit_array_forward", compiled.address, _SIGNATURE)
        _installed.append(compiled)


# --- the arrays' state ---------------------------------------------------------------------------------------------


@jit
def new_arrays(plans, np_, aval, na):
    s = new_struct(arrays_type)
    s.plans, s.np, s.aval, s.na = plans, np_, aval, na
    s.scratch, s.row = np.empty((4, 16)), np.zeros((1, WIDTH), np.int64)
    return s


@jit
def _grow_plans(s):
    plans = np.empty((2 * s.plans.shape[0] + 16, PLAN_WIDTH), np.int64)
    for i in range(s.np):  # loops, not slice copies (recording.grow's reason)
        for j in range(PLAN_WIDTH):
            plans[i, j] = s.plans[i, j]
    s.plans = plans


@jit
def _grow_arena(s, size):
    aval = np.empty(max(2 * s.aval.size, s.na + size, 1024))
    for i in range(s.na):
        aval[i] = s.aval[i]
    s.aval = aval


@jit
def open_record(p, q, code, ndim, n0, n1):
    """A new array record of ``code`` and shape (n0, n1) (right-aligned: the last ndim count): its record row, plan
    row and region (at the arena's top, as Storage._push_array places it on a tape that does not recycle)."""
    s = arrays_from_pointer(q)
    if s.np == s.plans.shape[0]:
        _grow_plans(s)
    size = n0 * n1
    if s.na + size > s.aval.size:
        _grow_arena(s, size)
    k, offset = s.np, s.na
    s.na += size
    row = push(p, code, k, NO_INPUT, 0.0).index
    plan = s.plans[k]
    plan[:] = 0
    plan[0], plan[1], plan[2], plan[3], plan[4], plan[5], plan[PLACE] = code, row, offset, ndim, n0, n1, -1
    s.np = k + 1
    return row, offset, k


@jit
def put_view(q, k, rec, ndim, n0, n1, s0, s1):
    """View (whole region of record rec, shape (n0, n1) and strides (s0, s1) right-aligned) as plan k's next input."""
    plan = arrays_from_pointer(q).plans[k]
    f = V0 + 7 * plan[6]
    plan[f], plan[f + 1], plan[f + 2], plan[f + 3], plan[f + 4], plan[f + 5], plan[f + 6] = rec, 0, ndim, n0, n1, s0, s1
    plan[6] += 1


@jit
def constant(p, q, c):
    """A 0-d constant record of c: (record, offset, ndim, n0, n1) as an operand."""
    row, offset, _ = open_record(p, q, ACONSTANT, 0, 1, 1)
    arrays_from_pointer(q).aval[offset] = c
    return row, offset, 0, 1, 1


@jit
def packed(p, q, index, c):
    """Scalar record ``index`` (value c) as a 0-d pack record, as operands.as_view writes a Var; a number (index
    -1, not recorded) as a constant."""
    if index < 0:
        return constant(p, q, c)
    row, offset, k = open_record(p, q, PACK, 0, 1, 1)
    s = arrays_from_pointer(q)
    s.aval[offset] = c
    s.plans[k, PLACE] = index
    return row, offset, 0, 1, 1


@jit
def data1(p, q, x):
    row, offset, _ = open_record(p, q, ACONSTANT, 1, 1, x.shape[0])
    aval = arrays_from_pointer(q).aval
    for j in range(x.shape[0]):
        aval[offset + j] = x[j]
    return row, offset, 1, 1, x.shape[0]


@jit
def data2(p, q, x):
    n, m = x.shape
    row, offset, _ = open_record(p, q, ACONSTANT, 2, n, m)
    aval = arrays_from_pointer(q).aval
    for i in range(n):
        for j in range(m):
            aval[offset + i * m + j] = x[i, j]
    return row, offset, 2, n, m


@jit
def common(a, b):
    """NumPy's broadcast of two axis lengths (-1: none)."""
    return a if a == b or b == 1 else b if a == 1 else -1


@jit
def _run(q):
    """The driver's forward of the one row written into the arrays' row table."""
    s = arrays_from_pointer(q)
    if FORWARD(address(s.row), 1, address(s.aval), s.aval.size, address(s.scratch), s.scratch.shape[1]) != 0:
        raise MemoryError("tape.jit: an array record's values could not be computed (scratch)")


@jit
def elementwise(p, q, code, driver_code, ndim, x, y, nin):
    """The record of elementwise op ``code`` of operands x (and y, nin 2), each (record, offset, ndim, n0, n1),
    broadcast as NumPy: its plan, region and values; (record, offset, n0, n1)."""
    n0 = common(x[3], y[3]) if nin == 2 else x[3]
    n1 = common(x[4], y[4]) if nin == 2 else x[4]
    if n0 < 0 or n1 < 0:
        raise ValueError("operands could not be broadcast together (tape.jit: shapes of an array op differ)")
    row, offset, k = open_record(p, q, code, ndim, n0, n1)
    s = arrays_from_pointer(q)
    if s.scratch.shape[1] < n0 * n1:
        s.scratch = np.empty((4, n0 * n1))
    t = s.row[0]
    t[:] = 0
    t[KIND], t[OP], t[ROW], t[OUT], t[SIZE], t[NIN] = kernels.ELEMENTWISE, driver_code, row, offset, n0 * n1, nin
    t[SHAPE], t[SHAPE + 1], t[SHAPE + 2], t[SHAPE + 3] = 1, 1, n0, n1
    t[OUT_STRIDES + 2], t[OUT_STRIDES + 3] = n1 if n0 != 1 else 0, 1 if n1 != 1 else 0
    for v in range(nin):
        o = x if v == 0 else y
        put_view(q, k, o[0], o[2], o[3], o[4], o[4] if o[2] == 2 else 0, 1 if o[2] > 0 else 0)
        f = VIEWS + VIEW * v
        t[f + REC], t[f + BASE] = o[0], o[1]
        t[f + STRIDES + 2] = o[4] if o[3] != 1 and n0 != 1 else 0
        t[f + STRIDES + 3] = 1 if o[4] != 1 and n1 != 1 else 0
    _run(q)
    return row, offset, n0, n1


@jit
def _coalesced(t):
    """Row t's space, output strides and view strides with adjacent axes that both walk as one merged, as
    encoding._coalesced merges them (a full sum of a block is one pairwise sum)."""
    shape, steps = t[SHAPE:SHAPE + 4].copy(), np.empty((2, 4), np.int64)
    steps[0], steps[1] = t[OUT_STRIDES:OUT_STRIDES + 4], t[VIEWS + STRIDES:VIEWS + STRIDES + 4]
    merged, msteps, count = np.ones(4, np.int64), np.zeros((2, 4), np.int64), 0
    for d in range(4):
        if shape[d] == 1:
            continue
        last = max(count - 1, 0)
        if count > 0 and msteps[0, last] == steps[0, d] * shape[d] and msteps[1, last] == steps[1, d] * shape[d]:
            merged[last] *= shape[d]
            msteps[0, last], msteps[1, last] = steps[0, d], steps[1, d]
        else:
            merged[count], msteps[0, count], msteps[1, count] = shape[d], steps[0, d], steps[1, d]
            count += 1
    t[SHAPE:SHAPE + 4] = 1
    t[OUT_STRIDES:OUT_STRIDES + 4] = 0
    t[VIEWS + STRIDES:VIEWS + STRIDES + 4] = 0
    for i in range(count):
        t[SHAPE + 4 - count + i] = merged[i]
        t[OUT_STRIDES + 4 - count + i], t[VIEWS + STRIDES + 4 - count + i] = msteps[0, i], msteps[1, i]


@jit
def summed(p, q, x, axis, ndim):
    """The sum record of operand x (record, offset, ndim, n0, n1) over ``axis`` (-1: all), of ndim ``ndim``:
    (record, offset, n0, n1)."""
    if x[3] * x[4] > encoding.LARGE:
        raise Unfit("a sum past encoding.LARGE elements")
    whole = axis < 0 or x[2] == 1
    n0, n1 = (1, 1) if whole else (1, x[3]) if axis == 1 else (1, x[4])
    row, offset, k = open_record(p, q, SUM, ndim, n0, n1)
    put_view(q, k, x[0], x[2], x[3], x[4], x[4] if x[2] == 2 else 0, 1)
    s = arrays_from_pointer(q)
    plan = s.plans[k]
    if whole:
        plan[AXES], plan[AXES + 1], plan[AXES + 2] = x[2], 0, 1
    else:
        plan[AXES], plan[AXES + 1] = 1, axis
    t = s.row[0]
    t[:] = 0
    t[KIND], t[OP], t[ROW], t[OUT], t[SIZE], t[NIN] = kernels.SUM, 0, row, offset, n0 * n1, 1
    t[SHAPE], t[SHAPE + 1], t[SHAPE + 2], t[SHAPE + 3] = 1, 1, x[3], x[4]
    t[VIEWS + REC], t[VIEWS + BASE] = x[0], x[1]
    t[VIEWS + STRIDES + 2], t[VIEWS + STRIDES + 3] = x[4] if x[3] != 1 else 0, 1 if x[4] != 1 else 0
    kept0, kept1 = (1, 1) if whole else (1, x[4]) if axis == 0 else (x[3], 1)  # the output's shape in x's space
    t[OUT_STRIDES + 2], t[OUT_STRIDES + 3] = kept1 if kept0 != 1 else 0, 1 if kept1 != 1 else 0
    _coalesced(t)
    _run(q)
    return row, offset, n0, n1


@jit
def matmul(p, q, a, b, ndim):
    """The matmul record of operands a and b (1-d ones widened as array_records._widened): (record, offset, n0, n1)."""
    n, inner = (1, a[4]) if a[2] == 1 else (a[3], a[4])
    inner_b, m = (b[4], 1) if b[2] == 1 else (b[3], b[4])
    if inner != inner_b:
        raise ValueError("matmul: inner dimensions differ (tape.jit: the shapes of an @ or np.dot)")
    middle = max(min(n, inner), min(max(n, inner), m))
    if not kernels.BLAS or middle < 2 or a[1] == b[1]:
        raise Unfit("a matmul NumPy runs by its dot or syrk")
    n0, n1 = (1, n * m) if ndim < 2 else (n, m)
    row, offset, k = open_record(p, q, MATMUL, ndim, n0, n1)
    ars, acs = (0, 1) if a[2] == 1 else (inner, 1)
    brs, bcs = (1, 0) if b[2] == 1 else (m, 1)
    put_view(q, k, a[0], 2, n, inner, ars, acs)
    put_view(q, k, b[0], 2, inner, m, brs, bcs)
    s = arrays_from_pointer(q)
    plan = s.plans[k]
    plan[WIDE], plan[WIDE + 1], plan[WIDE + 2] = 2, n, m
    t = s.row[0]
    t[:] = 0
    t[KIND], t[ROW], t[OUT], t[SIZE], t[NIN] = kernels.MATMUL, row, offset, n * m, 2
    t[SHAPE], t[SHAPE + 1], t[SHAPE + 2], t[SHAPE + 3] = n, inner, m, 1
    t[VIEWS + REC], t[VIEWS + BASE], t[VIEWS + STRIDES], t[VIEWS + STRIDES + 1] = a[0], a[1], ars, acs
    f = VIEWS + VIEW
    t[f + REC], t[f + BASE], t[f + STRIDES], t[f + STRIDES + 1] = b[0], b[1], brs, bcs
    _run(q)
    return row, offset, n0, n1


@jit
def element(p, q, record, offset):
    """The one element of a 0-d array record as a scalar record (an elem record, as array_records.elem): a Var."""
    return push(p, ELEM, record, 0, arrays_from_pointer(q).aval[offset])


@jit
def scalar(p, q, r):
    return element(p, q, r[0], r[1])


@jit
def vector(p, q, r):
    return make_array_record(p, q, r[0], r[1], (r[3],))


@jit
def matrix(p, q, r):
    return make_array_record(p, q, r[0], r[1], (r[2], r[3]))


RESULT = (scalar, vector, matrix)  # by ndim, from (p, q, (record, offset, n0, n1)): a 0-d one is the elem record
# reading it (a Var, as the Python recorder's wrap_view)


# --- after the call: the plan rows as the tape's Plans -----------------------------------------------------------


def _inputs(r: list[int]) -> tuple[View, ...]:
    """The views plan row r reads."""
    views = []
    for f in range(V0, V0 + 7 * r[6], 7):
        ndim = r[f + 2]
        views.append(View(r[f], r[f + 1], tuple(r[f + 5 - ndim:f + 5]), tuple(r[f + 7 - ndim:f + 7])))
    return tuple(views)


def _places(row: int) -> np.ndarray:
    places = np.array([row], np.int64)
    places.flags.writeable = False
    return places


def adopt(t, plans: np.ndarray, first: int, count: int, aval: np.ndarray, na: int) -> None:
    """Make plan rows first..count (written inside f) the tape's Plans, and its arena the one they were written in."""
    new, make = [], tuple.__new__
    for r in plans[first:count].tolist():
        shape = tuple(r[6 - r[3]:6])
        new.append(make(Plan, (r[0], r[1], r[2], shape, _inputs(r) if r[6] else (),
                               tuple(r[AXES + 1:AXES + 1 + r[AXES]]), _NO_PLACES if r[PLACE] < 0 else _places(r[PLACE]),
                               tuple(r[WIDE + 1:WIDE + 1 + r[WIDE]]) or shape)))
    t._plans.extend(new)
    rows = [p[1] for p in new]
    t._plan_rows.extend(rows)
    if aval is not t._aval:
        t._kept.drop()
        t._aval = aval
    t._n_arena = na
    if t._recycling:  # their values stay where the reverse sweep reads them (tape/sweeps/arenas.py)
        t._read.update(rows)


def plan_table(t) -> np.ndarray:
    """Room for the plans of a call (grown inside when full)."""
    return np.empty((len(t._plans) + 64, PLAN_WIDTH), np.int64)


def fits(view: View) -> bool:
    """Whether an array record's view can be f's xs: its whole region, 1-d or 2-d (views come in landing 2)."""
    return len(view.shape) in (1, 2) and view.offset == 0 and math.prod(view.shape) > 0 and view.strides == tuple(
        math.prod(view.shape[k + 1:]) for k in range(len(view.shape)))


__all__ = ["ArrayRecordType", "Unfit", "install", "new_arrays", "adopt", "plan_table", "fits", "PLAN_WIDTH"]
