"""Array records written from jitted code: one record per array operation, as tape/records/array_records.py writes it.

An array record inside f (numba_internals.ArrayRecordType) is its record, the offset of its region and its shape;
the array side of the call (ArraysType) holds the new plans as rows of PLAN_WIDTH numbers, the value arena and
scratch. A record is a row of the record table (its in0 the plan's place), a plan row and a region at the arena's
top; its values are the compiled array driver's (kernels/_array_driver.py ``forward``, NumPy's own loops and BLAS by
address, NumPy's bits) on a one-row table encoded from the plan row (array_rows.py). f calls a C function by address
for every op (``write_record``; a join's or a gather's ``write_moved``: f's machine code holds none of it, so a new f
compiles small), which calls the driver's forward by address too, each read from its cell of the driver's KERNELS
(made by array_calls.py: a writer when f first needs it, the forward and a row's kernel where cached, else once
NumPy's rule has stood in long enough). After the call the plan rows are the tape's plans (array_plans.adopt).

Values the driver's rows cannot give NumPy's bits for are NumPy's, called back (array_calls.by_numpy); a join's and a
gather's are copied by write_moved itself. What a
view cannot hold (an empty slice, a reshape NumPy copies) raises ``Unfit``: tape.jit records the call again as
scalar records.
"""

from __future__ import annotations

import numpy as np
from numba.core import cgutils
from numba.extending import intrinsic

from tape.compiled.array_lives import CAP, LINK, READ, READS, STATE, TAKEN, due, kept, new_life
from tape.compiled.array_rows import AXES, PADS, PLACE, PLAN_WIDTH, SLOT, V0, WIDE
from tape.compiled.numba_internals import (
    ArrayRecordType,
    address,
    arrays_type,
    make_array_record,
    new_struct,
    no_life,
    released_type,
    types,
)
from tape.compiled.numba_payload import arrays_from_pointer, tape_from_pointer
from tape.compiled.recording import jit, once, push
from tape.kernels import _array_driver as kernels
from tape.kernels._array_driver import BASE, REC, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import ACONSTANT, ARRAY_OPCODE
from tape.kernels.ops import ELEM
from tape.records.storage import NO_INPUT

OPERAND = "record, region, offset, ndim, n0, n1, s0, s1"  # an operand inside f: a view (offset, shape and strides
# right-aligned) of a record's region (a number or a NumPy array recorded first as a constant)
BROADCAST, INNER, FAILED, JOINED, UNMADE = -1, -2, -3, -4, -5  # write_record's failures (UNMADE: a C function it
# calls failed to compile)
PACK, SUM, MATMUL, JOIN, GATHER, MAX, MIN, LOGSUMEXP = (ARRAY_OPCODE[name] for name in (
    "pack", "sum", "matmul", "join", "gather", "max", "min", "logsumexp"))


class Unfit(Exception):
    """Operands whose values the driver's rows do not give as NumPy does: the call is recorded as scalar records."""


class WriterFailed(RuntimeError):
    """A C function array records call (write_record, write_moved, the lives') failed to compile: f raises this, its
    cause the compile's exception (``cause``: array_calls._writer_at's last)."""

    cause: BaseException | None = None

    def __init__(self) -> None:
        super().__init__(f"tape.jit: compiling a C function that writes array records failed: {self.cause!r}")
        self.__cause__ = self.cause


STAND_IN = 1 << 8  # by_numpy's flag: standing in for a row the driver may run (array_rows.SLOT): on the clock
UNDRIVEN, STANDING = -6, -7  # NumPy's rule gives the values: the driver's row would not give its bits; stands in
_BY_NUMPY = types.int64(types.voidptr, types.voidptr, types.voidptr, types.int64, types.int64)
BY_NUMPY = types.ExternalFunction("tape_jit_array_by_numpy", _BY_NUMPY)
_KERNEL_AT = types.int64(types.int64)
KERNEL_AT = types.ExternalFunction("tape_jit_array_kernel_at", _KERNEL_AT)  # (array_calls.py: 1 where made now)
WRITER_AT = types.ExternalFunction("tape_jit_array_writer_at", _KERNEL_AT)  # (array_calls.py: a cell's C function
# made now, its address; 0 where it failed)
_BY_PLAN = types.int64(types.voidptr, types.voidptr, types.int64)  # array_calls._lives_c's and _forward_c's


# --- the arrays' state ---------------------------------------------------------------------------------------------


@jit
def new_arrays(plans, np_, aval, na, recycle):
    """The arrays' state of a call whose plans start at np_ (recycle: array_lives.RECYCLE, CHECKED, or 0)."""
    s = new_struct(arrays_type)
    s.plans, s.np, s.aval, s.na, s.first, s.recycle = plans, np_, aval, na, np_, recycle
    s.scratch, s.row = np.empty((4, 16)), np.empty((1, WIDTH + VIEW), np.int64)  # (a join's third view)
    s.heads, s.busy, s.recorded = np.empty(66, np.int64), np.empty(3, np.int64), 0  # (free lists by bit length)
    for i in range(66):  # (a loop, not np.full; the row zeroed by each writer: a first gradient compiles neither)
        s.heads[i] = -1
    s.busy[0], s.busy[1], s.busy[2] = -1, -1, -1
    s.released = new_struct(released_type)
    s.released.rows, s.released.n = np.empty(64, np.int64), 0
    s.pinned, s.free = -1, 0  # (array_lives.py: where its C function last marked what records read; its free regions)
    return s


@once
def _grow_plans(s):
    plans = np.empty((2 * s.plans.shape[0] + 16, PLAN_WIDTH), np.int64)
    for i in range(s.np):  # loops, not slice copies (recording.grow's reason)
        for j in range(PLAN_WIDTH):
            plans[i, j] = s.plans[i, j]
    s.plans = plans


@once
def _grow_arena(s, size):
    aval = np.empty(max(2 * s.aval.size, s.na + size, 1024))
    for i in range(s.na):
        aval[i] = s.aval[i]
    s.aval = aval


@once
def open_record(p, q, code, ndim, n0, n1):
    """A new array record of ``code`` and shape (n0, n1) (right-aligned: the last ndim count): its record row, plan
    row and region (a freed record's where the tape recycles and one fits, array_lives.reuse; else at the arena's top,
    as Storage._push_array places it); its plan."""
    s = arrays_from_pointer(q)
    if s.np == s.plans.shape[0]:
        _grow_plans(s)
    size = n0 * n1
    old = _lives(p, q, size) if s.recycle and size and due(s, size) else -1
    s.recorded += size
    if old < 0 and s.na + size > s.aval.size:
        _grow_arena(s, size)
    k, offset, cap = s.np, s.na, size
    if old >= 0:
        offset, cap = s.plans[old, 2], s.plans[old, CAP]
    else:
        s.na += size
    row = push(p, code, k, NO_INPUT, 0.0).index
    plan = s.plans[k]
    plan[:] = 0
    plan[0], plan[1], plan[2], plan[3], plan[4], plan[5], plan[PLACE] = code, row, offset, ndim, n0, n1, -1
    plan[CAP], plan[LINK] = cap, -1
    if old >= 0:
        s.plans[old, STATE] |= TAKEN
        s.plans[old, LINK] = row
    s.np = k + 1
    return k


@once
def put_view(s, k, o):
    """Operand o (an operand tuple: OPERAND) as plan k's next input, and as the same view of its one-row table."""
    plan, v = s.plans[k], s.plans[k, 6]
    f = V0 + 7 * v
    plan[f], plan[f + 1], plan[f + 2], plan[f + 3], plan[f + 4], plan[f + 5], plan[f + 6] = (
        o[0], o[2], o[3], o[4], o[5], o[6], o[7])
    plan[6] = v + 1
    t = VIEWS + VIEW * v
    s.row[0, t + REC], s.row[0, t + BASE] = o[0], o[1] + o[2]


@once
def common(a, b):
    """NumPy's broadcast of two axis lengths (-1: none)."""
    return a if a == b or b == 1 else b if a == 1 else -1


@once
def _elementwise(s, p, q, code, a, b, e, nin):
    """The record of elementwise op ``code`` of operands a (and b, nin 2; and e, nin 3: a select), broadcast as NumPy:
    its plan (-1: the shapes do not broadcast)."""
    n0 = common(a[4], b[4]) if nin > 1 else a[4]
    n1 = common(a[5], b[5]) if nin > 1 else a[5]
    if nin == 3:
        n0, n1 = common(n0, e[4]) if n0 >= 0 else n0, common(n1, e[5]) if n1 >= 0 else n1
    if n0 < 0 or n1 < 0:
        return BROADCAST
    k = open_record(p, q, code, max(a[3], b[3], e[3] if nin == 3 else 0), n0, n1)
    for v in range(nin):
        put_view(s, k, a if v == 0 else b if v == 1 else e)
    return k


@once
def _summed(s, p, q, code, a, axis, ndim):
    """The sum (max, min) record of operand a over ``axis`` (-1: all), of ndim ``ndim``: its plan."""
    whole = axis < 0 or a[3] == 1
    n0, n1 = (1, 1) if whole else (1, a[4]) if axis == 1 else (1, a[5])
    if ndim == 2 and not whole:  # keepdims
        n0, n1 = (a[4], 1) if axis == 1 else (1, a[5])
    k = open_record(p, q, code, ndim, n0, n1)
    put_view(s, k, a)
    plan = s.plans[k]
    if whole:
        plan[AXES], plan[AXES + 1], plan[AXES + 2] = a[3], 0, 1
    else:
        plan[AXES], plan[AXES + 1] = 1, axis
    return k


@once
def _matmul(s, p, q, a, b, ndim):
    """The matmul record of operands a and b (1-d ones widened as array_records._widened): its plan (INNER: the
    inner lengths differ)."""
    n, inner = (1, a[5]) if a[3] == 1 else (a[4], a[5])
    inner_b, m = (b[5], 1) if b[3] == 1 else (b[4], b[5])
    if inner != inner_b:
        return INNER
    shape = (1, n * m) if ndim < 2 else (n, m)
    k = open_record(p, q, MATMUL, ndim, shape[0], shape[1])
    sa, sb = (0, a[7]) if a[3] == 1 else (a[6], a[7]), (b[7], 0) if b[3] == 1 else (b[6], b[7])
    put_view(s, k, (a[0], a[1], a[2], 2, n, inner, sa[0], sa[1]))
    put_view(s, k, (b[0], b[1], b[2], 2, inner, m, sb[0], sb[1]))
    plan = s.plans[k]
    plan[WIDE], plan[WIDE + 1], plan[WIDE + 2] = 2, n, m
    return k


@once
def _joined(s, p, q, a, b, e, nin, axis):
    """The join record of operands a, b (and e, nin 3) along ``axis``: its plan (JOINED: the other axes differ)."""
    at = 4 + axis + 2 - a[3]  # the joined axis among (n0, n1)
    other = 9 - at
    length = a[at]
    for v in range(1, nin):
        o = b if v == 1 else e
        if o[3] != a[3] or o[other] != a[other]:
            return JOINED
        length += o[at]
    shape = (a[4], length) if at == 5 else (length, a[5])
    k = open_record(p, q, JOIN, a[3], shape[0], shape[1])
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
    """The gather record of np.pad's copying mode b[7] of flat view a of shape b[4:6] (b[6] axes) by widths b[:4]: its
    plan, its values each element's source copied (np.pad's, the same bits), the mode, widths and a's start and stride
    kept in the row for its Plan's places (array_gather.places). Its input: the region as far as a reaches (its Plan
    reads the whole)."""
    k = open_record(p, q, GATHER, b[6], b[4] + b[0] + b[1], b[5] + b[2] + b[3])
    reach = a[2] + 1 if a[7] < 0 else a[2] + a[7] * (a[5] - 1) + 1
    put_view(s, k, (a[0], a[1], 0, 1, 1, reach, 0, 1))
    plan, mode, n0, n1 = s.plans[k], b[7], b[4], b[5]
    plan[PADS], plan[PADS + 1], plan[PADS + 2], plan[PADS + 3], plan[PADS + 4], plan[PADS + 5], plan[PADS + 6] = (
        mode, b[0], b[1], b[2], b[3], a[2], a[7])
    out, width, base, stride, aval = plan[2], plan[5], a[1] + a[2], a[7], s.aval
    for i in range(plan[4]):
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


@intrinsic
def _move(typingctx, aval, to, source, n):
    """aval[to:to + n] = aval[source:source + n] by one memmove (a loop of Numba's copies one element a step: a heat
    step's joins, 20,000 elements, 0.67 -> 0.28 ns an element; a slice copy compiles NumPy's shape errors)."""
    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        cgutils.raw_memmove(builder, builder.gep(data, [args[1]]), builder.gep(data, [args[2]]), args[3], 8)
    return types.void(aval, types.int64, types.int64, types.int64), codegen


@once
def _copied(s, k, a, b, e, nin, at):
    """Join plan k's values: each operand's elements copied into its slice of the region, along axis ``at`` of
    (n0, n1) (4 or 5), as np.concatenate copies them (the same bits)."""
    out, width, along, aval = s.plans[k, 2], s.plans[k, 5], 0, s.aval
    for v in range(nin):
        o = a if v == 0 else b if v == 1 else e
        base, first, step = o[1] + o[2], out + (along * width if at == 4 else along), o[7]
        for i in range(o[4]):
            to, source = first + i * width, base + i * o[6]
            if step == 1:
                _move(aval, to, source, o[5])
                continue
            for j in range(o[5]):
                aval[to + j] = aval[source + j * step]
        along += o[at]
    return k


@once
def _writer(cell):
    """The address of the C function at a cell of KERNELS, made now where it is not yet (WRITER_AT); 0 where that
    failed."""
    at = kernels._kernel(cell)
    return at if at != 0 else WRITER_AT(cell)


@once
def _lives(p, q, size):
    """array_calls._lives_c by address: its answer (where it failed to compile, -1 and the arrays' ``pinned`` UNMADE:
    written3 raises)."""
    at = _writer(kernels.LIVES_AT)
    if at == 0:
        arrays_from_pointer(q).pinned = UNMADE
        return -1
    return kernels._status(at, (p, q, size))


@jit
def ended(p, q):
    """After f (on a recycling tape): what the records written since the lives' C function last ran read marked as it
    marks them (where it never ran, nothing was given away: every record kept, array_lives.kept)."""
    s = arrays_from_pointer(q)
    if s.recycle and s.pinned < 0:
        kept(s)
    elif s.recycle:
        _lives(p, q, 0)


@once
def _pin(s, p, k):
    """Mark the records whose values plan k's reverse step reads (array_lives.READS): their regions are kept."""
    plan, t = s.plans[k], tape_from_pointer(p)
    nin, constants = plan[6], 0
    for v in range(nin):
        if t.op[plan[V0 + 7 * v]] == ACONSTANT:
            constants |= 1 << v
    reads = READS[plan[0] * 32 + nin * 8 + constants]
    for v in range(nin):
        j = t.in0[plan[V0 + 7 * v]]
        if reads >> v & 1 and s.first <= j < s.np:
            s.plans[j, STATE] |= READ
    if reads & 8:
        plan[STATE] |= READ


@once
def write_record(p, q, code, arg, c, a, b, e):
    """The array record of op ``code`` (arg: an elementwise op's inputs, a sum's axis, -1 all, then its ndim * 2 ** 8,
    a constant's ndim; c a 0-d constant's or pack's value, arg the pack's scalar record) of operands a, b and e
    (OPERAND tuples), its values the driver's: its plan, or a failure (< 0) f raises (``written``). Not a join's or a
    gather's (``write_moved``)."""
    s = arrays_from_pointer(q)
    s.row[0, :] = 0
    s.busy[0], s.busy[1], s.busy[2] = a[0], b[0], e[0]  # (their regions not given to the record written)
    if code == PACK and arg < 0:  # a number in a Var (not recorded): a constant
        code, arg = ACONSTANT, 0
    if code == ACONSTANT:  # a NumPy array's values are copied in by f
        k = open_record(p, q, ACONSTANT, arg, a[4], a[5])
        s.aval[s.plans[k, 2]] = c
        return k
    if code == PACK:
        k = open_record(p, q, PACK, 0, 1, 1)
        s.aval[s.plans[k, 2]], s.plans[k, PLACE] = c, arg
        return k
    if code == SUM or code == MAX or code == MIN or code == LOGSUMEXP:
        k = _summed(s, p, q, code, a, arg % 256 - 1, arg // 256)
    elif code == MATMUL:
        k = _matmul(s, p, q, a, b, arg)
    else:
        k = _elementwise(s, p, q, code, a, b, e, arg)
    if k < 0:
        return k
    at = SLOT[code]  # (-1: no driver row gives its values)
    done = UNDRIVEN if at < 0 else STANDING  # (the forward not made: NumPy's rule stands in, the row's layout unseen)
    if at >= 0 and (kernels._kernel(kernels.FORWARD_AT) != 0 or KERNEL_AT(at) != 0):
        done = kernels._status(kernels._kernel(kernels.FORWARD_AT), (p, q, k))  # (array_calls._forward_c)
    if done == STANDING or done == UNDRIVEN:
        return _numpy_values(s, p, k, STAND_IN if done == STANDING else 0)
    return done


@once
def _numpy_values(s, p, k, flags):
    """Plan k's values by NumPy's rule (BY_NUMPY; ``flags`` 0 or STAND_IN), its 0-d constants read as floats: k, or
    FAILED."""
    ops, plan, constants = tape_from_pointer(p).op, s.plans[k], flags
    for v in range(plan[6]):
        if plan[V0 + 7 * v + 2] == 0 and ops[plan[V0 + 7 * v]] == ACONSTANT:
            constants |= 1 << v
    return k if BY_NUMPY(address(plan), address(s.row), address(s.aval), s.aval.size, constants) == 0 else FAILED


@once
def write_moved(p, q, code, arg, c, a, b, e):
    """write_record of a join (arg: its axis, then its inputs * 2 ** 8) or a gather: a C function of its own, made
    when f first writes one (an f that joins nothing never compiles these paths); its values copied, as NumPy's."""
    s = arrays_from_pointer(q)
    s.row[0, :] = 0
    s.busy[0], s.busy[1], s.busy[2] = a[0], b[0], e[0]  # (as write_record's)
    if code == GATHER:
        return _padded(s, p, q, a, b)
    nin, axis = arg // 256, arg % 256
    k = _joined(s, p, q, a, b, e, nin, axis)
    return k if k < 0 else _copied(s, k, a, b, e, nin, 6 + axis - a[3])


_WRITE = types.int64(types.voidptr, types.voidptr, types.int64, types.int64, types.float64, *[types.int64] * 24)


@once
def written(p, q, code, arg, c, a, b):
    """Record op ``code`` of operands a and b: written3's."""
    return written3(p, q, code, arg, c, a, b, b)


@once
def written3(p, q, code, arg, c, a, b, e):
    """Record op ``code`` of operands a, b and e (write_record or write_moved, called by address: its machine code is
    made once, not in every f, when first needed): (record, offset, n0, n1) of the new array record, or the failure
    raised."""
    at = _writer(kernels.MOVE_AT if code == JOIN or code == GATHER else kernels.WRITE_AT)
    k = kernels._status(at, (p, q, code, arg, c, *a, *b, *e)) if at != 0 else UNMADE
    if k == JOINED:
        raise ValueError("all the input array dimensions except for the concatenation axis must match exactly "
                         "(tape.jit: an array record's np.concatenate)")
    if k == BROADCAST:
        raise ValueError("operands could not be broadcast together (tape.jit: shapes of an array op differ)")
    if k == INNER:
        raise ValueError("matmul: inner dimensions differ (tape.jit: the shapes of an @ or np.dot)")
    s = arrays_from_pointer(q)
    if k == UNMADE or s.pinned == UNMADE:
        raise WriterFailed()
    if k < 0:
        raise MemoryError("tape.jit: an array record's values could not be computed (out of memory)")
    plan = s.plans[k]
    return plan[1], plan[2], plan[4], plan[5]


@jit
def data(p, q, x):
    """A NumPy array x as a constant record of its shape, as an operand."""
    shape = ((1, 1) + x.shape)[-2:]
    o = (-1, 0, 0, x.ndim, shape[0], shape[1], 0, 0)
    row, offset, n0, n1 = written(p, q, ACONSTANT, x.ndim, 0.0, o, o)
    aval = arrays_from_pointer(q).aval
    for j, v in enumerate(x.flat):
        aval[offset + j] = v
    return whole(row, offset, x.ndim, n0, n1)


@jit
def whole(record, offset, ndim, n0, n1):
    """The operand of a whole region (record, its offset, shape (n0, n1) right-aligned, C order): OPERAND."""
    return record, offset, 0, ndim, n0, n1, n1 if ndim == 2 else 0, 1 if ndim > 0 else 0


@jit
def element(p, q, record, offset, place):
    """The element at ``place`` of an array record's region (at ``offset``) as a scalar record (an elem record, as
    array_records.elem writes it): a Var."""
    return push(p, ELEM, record, place, arrays_from_pointer(q).aval[offset + place])


@jit
def scalar(p, q, r):
    return element(p, q, r[0], r[1], 0)


@jit
def life(q, row):
    """The life of the new record at ``row``: one that releases it where the tape recycles (array_lives.py)."""
    s = arrays_from_pointer(q)
    return new_life(s.released, row) if s.recycle else no_life()


@jit
def vector(p, q, r):
    return make_array_record(p, q, r[0], r[1], 0, (r[3],), (1,), life(q, r[0]))


@jit
def matrix(p, q, r):
    return make_array_record(p, q, r[0], r[1], 0, (r[2], r[3]), (r[3], 1), life(q, r[0]))


RESULT = (scalar, vector, matrix)  # by ndim, from (p, q, (record, offset, n0, n1)): a 0-d one is the elem record
# reading it (a Var, as the Python recorder's wrap_view)


__all__ = ["ArrayRecordType", "Unfit", "new_arrays", "PLAN_WIDTH"]
