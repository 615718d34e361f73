"""The values of tape.jit's join and gather records (array_records.py writes their records and plans): each operand's
elements copied into the region as np.concatenate and np.pad's copying modes copy them (the same bits), by
``write_moved``, a C function of its own (array_calls.py's, made when f first joins or pads). Joins have up to DIMS
axes, pads one or two (array_overloads.py, array_joins.py type no more).
"""

from __future__ import annotations

import numpy as np
from numba.core import cgutils
from numba.extending import intrinsic

from tape.compiled.array_gather import COPY
from tape.compiled.array_records import (
    DIMS,
    GATHER,
    JOIN,
    JOINED,
    N1,
    OL,
    ONES,
    OS,
    S1,
    ZEROS,
    open_record,
    put_view,
)
from tape.compiled.array_rows import AXES, INPUTS, LENGTHS, PADS
from tape.compiled.numba_internals import types
from tape.compiled.numba_payload import arrays_from_pointer
from tape.compiled.recording import once


@once
def _joined(s, p, q, a, b, e, nin, axis):
    """The join record of operands a, b (and e, nin 3) along ``axis``: its plan (JOINED: the other axes differ)."""
    at = OL + DIMS - a[3] + axis  # the joined axis among a's lengths
    n = np.empty(DIMS, np.int64)
    for d in range(DIMS):
        n[d] = a[OL + d]
    for v in range(1, nin):
        o = b if v == 1 else e
        for d in range(DIMS):
            if o[3] != a[3] or OL + d != at and o[OL + d] != a[OL + d]:
                return JOINED
        n[at - OL] += o[at]
    k = open_record(p, q, JOIN, a[3], n, 0)
    for v in range(nin):
        put_view(s, k, a if v == 0 else b if v == 1 else e)
    s.plans[k, AXES], s.plans[k, AXES + 1] = 1, axis
    return k


@once
def _source(mode, i, n):
    """The place along an axis of n elements that np.pad's copying ``mode`` (array_gather.MODES) reads for place i of
    the axis extended both ways (i < 0 before it): edge, reflect, symmetric, wrap."""
    if mode == 0:
        return min(max(i, 0), n - 1)
    if mode == 3:
        return i % n
    period = 2 * n - 2 if mode == 1 else 2 * n
    if period == 0:  # (reflect of one element: itself)
        return 0
    j = i % period
    return j if j < n else period - j - (mode == 2)


@once
def _padded(s, p, q, a, b):
    """The gather record of np.pad's copying mode b[7] of flat view a of shape b[4:6] (b[6] axes, at most 2) by widths
    b[:4] (b an operand's numbers): its
    plan, its values each element's source copied (np.pad's, the same bits), the mode, widths and a's start and stride
    kept in the row for its Plan's places (array_gather.places). Its input: the region as far as a reaches (its Plan
    reads the whole)."""
    k = open_record(p, q, GATHER, b[6], ONES[2:] + (b[4] + b[0] + b[1], b[5] + b[2] + b[3]), 0)
    reach = a[2] + 1 if a[S1] < 0 else a[2] + a[S1] * (a[N1] - 1) + 1
    put_view(s, k, (a[0], a[1], 0, 1) + ONES[1:] + (reach,) + ZEROS[1:] + (1,))
    plan, mode, n0, n1 = s.plans[k], b[7], b[4], b[5]
    plan[PADS], plan[PADS + 1], plan[PADS + 2], plan[PADS + 3], plan[PADS + 4], plan[PADS + 5], plan[PADS + 6] = (
        mode, b[0], b[1], b[2], b[3], a[2], a[S1])
    out, width, base, stride, aval = plan[2], plan[INPUTS - 1], a[1] + a[2], a[S1], s.aval
    for i in range(plan[INPUTS - 2]):
        r, at = _source(mode, i - b[0], n0) * n1, out + i * width
        for j in range(b[2]):
            aval[at + j] = aval[base + stride * (r + _source(mode, j - b[2], n1))]
        if stride == 1:  # (the middle: no source asked)
            _move(aval, at + b[2], base + r, n1)
        for j in range(b[2], b[2] + n1 if stride != 1 else b[2]):
            aval[at + j] = aval[base + stride * (r + j - b[2])]
        for j in range(b[2] + n1, width):
            aval[at + j] = aval[base + stride * (r + _source(mode, j - b[2], n1))]
    return k


@once
def _copy(s, p, q, a, b):
    """The gather record of view a's elements in C order, of b[6] axes of lengths b[8:] (right-aligned): a reshape NumPy
    copies. Its values copied (the same bits), a's offset, ndim, lengths and strides kept in the row for its Plan's
    places (array_gather.places); its input, as a pad's, the region as far as a reaches."""
    k = open_record(p, q, GATHER, b[6], b, OL + DIMS)
    reach = a[2] + 1
    for d in range(DIMS):
        reach += max(a[OL + d] - 1, 0) * max(a[OS + d], 0)
    put_view(s, k, (a[0], a[1], 0, 1) + ONES[1:] + (reach,) + ZEROS[1:] + (1,))
    plan = s.plans[k]
    plan[PADS], plan[PADS + 1], plan[PADS + 2] = COPY, a[2], a[3]
    for d in range(2 * DIMS):
        plan[PADS + 3 + d] = a[OL + d]
    at, base, n, t, aval = plan[2], a[1] + a[2], a[OL:OS], a[OS:], s.aval
    for i in range(n[0]):
        for j in range(n[1]):
            for m in range(n[2]):
                source = base + i * t[0] + j * t[1] + m * t[2]
                for r in range(n[3]):
                    aval[at] = aval[source + r * t[3]]
                    at += 1
    return k


@intrinsic
def _move(typingctx, aval, to, source, n):
    """aval[to:to + n] = aval[source:source + n] by one memmove (a loop of Numba's copies one element a step: a heat
    step's joins, 20,000 elements, 0.67 -> 0.28 ns an element; a slice copy compiles NumPy's shape errors)."""
    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        cgutils.raw_memmove(builder, builder.gep(data, [args[1]]), builder.gep(data, [args[2]]), args[3], 8)
    return types.void(aval, types.int64, types.int64, types.int64), codegen


@once
def _copied(s, k, a, b, e, nin, axis):
    """Join plan k's values: each operand's elements copied into its slice of the region along ``axis`` (of the DIMS
    right-aligned lengths), as np.concatenate copies them (the same bits)."""
    plan, aval = s.plans[k], s.aval
    step = np.ones(DIMS, np.int64)  # the region's strides (C order)
    for d in range(DIMS - 2, -1, -1):
        step[d] = step[d + 1] * plan[LENGTHS + d + 1]
    along = 0
    for v in range(nin):
        o = a if v == 0 else b if v == 1 else e
        base, first, n, t = o[1] + o[2], plan[2] + along * step[axis], o[OL:OS], o[OS:]
        for i in range(n[0]):
            for j in range(n[1]):
                for m in range(n[2]):
                    to, source = first + i * step[0] + j * step[1] + m * step[2], base + i * t[0] + j * t[1] + m * t[2]
                    if t[3] == 1:
                        _move(aval, to, source, n[3])
                        continue
                    for r in range(n[3]):
                        aval[to + r] = aval[source + r * t[3]]
        along += n[axis]
    return k


@once
def write_moved(p, q, code, arg, c, a, b, e):
    """write_record of a join (arg: its axis, then its inputs * 2 ** 8) or a gather: a C function of its own, made
    when f first writes one (an f that joins nothing never compiles these paths); its values copied, as NumPy's."""
    s = arrays_from_pointer(q)
    s.row[0, :] = 0
    s.busy[0], s.busy[1], s.busy[2] = a[0], b[0], e[0]  # (as write_record's)
    if code == GATHER:
        return _copy(s, p, q, a, b) if b[7] == COPY else _padded(s, p, q, a, b)
    nin, axis = arg // 256, arg % 256
    k = _joined(s, p, q, a, b, e, nin, axis)
    return k if k < 0 else _copied(s, k, a, b, e, nin, DIMS - a[3] + axis)
