"""Array records written from jitted code: one record per array operation, as tape/records/array_records.py writes it.

An array record inside f (numba_internals.ArrayRecordType) is its record, the offset of its region and its shape;
the array side of the call (ArraysType) holds the new plans as rows of PLAN_WIDTH numbers, the value arena and
scratch. A record is a row of the record table (its in0 the plan's place), a plan row and a region at the arena's
top; its values are the compiled array driver's (kernels/_array_driver.py ``forward``, NumPy's own loops and BLAS by
address, NumPy's bits) on a one-row table encoded from the plan row (array_rows.py). f calls a C function by address
for every op (``write_record``; a join's or a gather's ``write_moved``, array_moved.py: f's machine code holds none
of it, so a new f compiles small), which calls the driver's forward by address too, each read from its cell of the
driver's KERNELS (made by array_calls.py: a writer when f first needs it, the forward and a row's kernel where cached,
else once NumPy's rule has stood in long enough). After the call the plan rows are the tape's plans (array_plans.adopt).

Values the driver's rows cannot give NumPy's bits for are NumPy's, called back (array_calls.by_numpy); a join's and a
gather's are copied by write_moved itself. What a
view cannot hold (an empty slice, a reshape NumPy copies) raises ``Unfit``: tape.jit records the call again as
scalar records.
"""

from __future__ import annotations

import numpy as np
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled.array_lives import READ, READS, TAKEN, due, kept, new_life
from tape.compiled.array_rows import (
    AXES,
    CAP,
    DIMS,
    INPUTS,
    LENGTHS,
    LINK,
    PLACE,
    PLAN_WIDTH,
    SLOT,
    STATE,
    V0,
    VIEW_WIDTH,
    WIDE,
)
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

OPERAND = "record, region, offset, ndim, lengths (DIMS), strides (DIMS)"  # an operand inside f: a view (its offset,
# lengths right-aligned after 1s, strides after 0s) of a record's region (a number or a NumPy array recorded first as
# a constant)
OL, OS, LAST = 4, 4 + DIMS, -DIMS  # where an operand's lengths and strides start; (a tuple's last DIMS)
ONES, ZEROS = (1,) * DIMS, (0,) * DIMS  # the lengths of a 0-d record, its strides
N0, N1 = OL + DIMS - 2, OL + DIMS - 1  # an operand's last two lengths (a matrix's, a join's, a pad's)
S0, S1 = OS + DIMS - 2, OS + DIMS - 1
BROADCAST, INNER, FAILED, JOINED, UNMADE = -1, -2, -3, -4, -5  # write_record's failures (UNMADE: its C call's compile)
PACK, SUM, MATMUL, JOIN, GATHER, MAX, MIN, LOGSUMEXP, CUMSUM, CUMPROD, SORT = (ARRAY_OPCODE[name] for name in (
    "pack", "sum", "matmul", "join", "gather", "max", "min", "logsumexp", "cumsum", "cumprod", "sort"))
FACTORED = tuple(ARRAY_OPCODE[name] for name in ("solve", "inv", "det", "slogdet", "cholesky", "eigh", "qr", "svd"))
SOLVE, INV, DET, SLOGDET, CHOLESKY, EIGH, QR, SVD = FACTORED
SQUARE, SINGULAR = -8, -9  # write_record's failures of np.linalg's records: not square; singular or not definite


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
    s.scratch, s.row = np.empty((4, 16)), np.empty((3, WIDTH + VIEW), np.int64)  # (a join's third view; a select's
    # two rows after row 0: array_rows.rows)
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
def open_record(p, q, code, ndim, lengths, at):
    """A new array record of ``code`` and shape lengths[at:at + DIMS] (right-aligned: the last ndim count): its record
    row, plan row and region (a freed record's where the tape recycles and one fits, array_lives.reuse; else at the
    arena's top, as Storage._push_array places it); its plan."""
    s = arrays_from_pointer(q)
    if s.np == s.plans.shape[0]:
        _grow_plans(s)
    size = 1
    for d in range(DIMS):
        size *= lengths[at + d]
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
    plan[0], plan[1], plan[2], plan[3], plan[PLACE] = code, row, offset, ndim, -1
    for d in range(DIMS):
        plan[LENGTHS + d] = lengths[at + d]
    plan[CAP], plan[LINK] = cap, -1
    if old >= 0:
        s.plans[old, STATE] |= TAKEN
        s.plans[old, LINK] = row
    s.np = k + 1
    return k


@once
def put_view(s, k, o):
    """Operand o (an operand tuple: OPERAND) as plan k's next input, and as the same view of its one-row table."""
    plan, v = s.plans[k], s.plans[k, INPUTS]
    f = V0 + VIEW_WIDTH * v
    plan[f] = o[0]
    for i in range(1, VIEW_WIDTH):  # (offset, ndim, lengths, strides)
        plan[f + i] = o[i + 1]
    plan[INPUTS] = v + 1
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
    n = np.empty(DIMS, np.int64)
    for d in range(DIMS):
        n[d] = common(a[OL + d], b[OL + d]) if nin > 1 else a[OL + d]
        n[d] = common(n[d], e[OL + d]) if nin == 3 and n[d] >= 0 else n[d]
        if n[d] < 0:
            return BROADCAST
    k = open_record(p, q, code, max(a[3], b[3], e[3] if nin == 3 else 0), n, 0)
    for v in range(nin):
        put_view(s, k, a if v == 0 else b if v == 1 else e)
    return k


@once
def _summed(s, p, q, code, a, axes, ndim):
    """The sum (max, min, logsumexp) record of operand a over the axes of bit mask ``axes`` (0: all), of ndim ``ndim``
    (a's: keepdims): its plan, the axes listed in order, as tape/records/array_records.py's reduce."""
    first = DIMS - a[3]  # (a's first axis among the DIMS lengths)
    axes = axes if axes else (1 << a[3]) - 1
    n, to = np.ones(DIMS, np.int64), DIMS - 1
    for d in range(DIMS - 1, -1, -1):
        reduced = d >= first and axes >> (d - first) & 1
        if not reduced:
            n[to] = a[OL + d]
        to -= 1 if not reduced or ndim == a[3] else 0
    k = open_record(p, q, code, ndim, n, 0)
    put_view(s, k, a)
    plan, count = s.plans[k], 0
    for d in range(a[3]):
        if axes >> d & 1:
            count += 1
            plan[AXES + count] = d
    plan[AXES] = count
    return k


@once
def _along(s, p, q, code, a, axis):
    """The cumsum, cumprod or sort record of operand a along ``axis`` (of a's axes), of a's shape: its plan."""
    k = open_record(p, q, code, a[3], a, OL)
    put_view(s, k, a)
    s.plans[k, AXES], s.plans[k, AXES + 1] = 1, axis
    return k


@once
def _factored(s, p, q, code, a, b):
    """The np.linalg record ``code`` of matrices a (and b, solve's), as kernels/linalg.py's shapes: its plan (SQUARE,
    INNER, BROADCAST: the shapes do not fit)."""
    if a[N0] != a[N1] and code != QR and code != SVD:
        return SQUARE
    shift = 2 if code == DET else 1 if code == SLOGDET else 0  # (a's batch, then slogdet's pair)
    n, ndim = np.ones(DIMS, np.int64), a[3] - shift
    for d in range(DIMS - shift):  # a's lengths moved right by ``shift``
        n[d + shift] = a[OL + d]
    if code == SLOGDET:
        n[DIMS - 1] = 2
    if code == EIGH or code == QR:  # (w over V; Q over R)
        n[DIMS - 2] = a[N0] + (1 if code == EIGH else a[N1])
    if code == SVD:  # (U, s, V of min(m, n) columns)
        n[DIMS - 2], n[DIMS - 1] = a[N0] + 1 + a[N1], min(a[N0], a[N1])
    if code == SOLVE:
        if b[N0] != a[N1]:
            return INNER
        for d in range(DIMS - 2):
            n[d] = common(a[OL + d], b[OL + d])
            if n[d] < 0:
                return BROADCAST
        n[DIMS - 1], ndim = b[N1], max(a[3], b[3])
    k = open_record(p, q, code, ndim, n, 0)
    put_view(s, k, a)
    if code == SOLVE:
        put_view(s, k, b)
    return k


@once
def _matmul(s, p, q, a, b, ndim):
    """The matmul record of operands a and b of ndim ``ndim`` (1-d ones widened as array_records._widened, batch axes
    broadcast; wide (batch..., n, m) in WIDE): its plan (INNER: the inner lengths differ; BROADCAST: the batches)."""
    n, inner = (1, a[N1]) if a[3] == 1 else (a[N0], a[N1])
    inner_b, m = (b[N1], 1) if b[3] == 1 else (b[N0], b[N1])
    if inner != inner_b:
        return INNER
    wide, out, batch = np.ones(DIMS, np.int64), np.ones(DIMS, np.int64), max(a[3], b[3], 2) - 2
    wide[DIMS - 2], wide[DIMS - 1] = n, m
    for d in range(DIMS - 2):  # (1 past each operand's axes)
        wide[d] = common(a[OL + d], b[OL + d])
        if wide[d] < 0:
            return BROADCAST
    for d in range(DIMS - ndim, DIMS):  # batch, then n where a has two axes or more, m where b has
        out[d] = wide[d - (b[3] == 1) - (a[3] == 1) * (d < DIMS - (b[3] > 1))]
    k = open_record(p, q, MATMUL, ndim, out, 0)
    put_view(s, k, (a[0], a[1], a[2], max(a[3], 2)) + a[OL:])
    put_view(s, k, (b[0], b[1], b[2], 2) + ONES[2:] + (inner, 1) + ZEROS[2:] + (b[S1], 0) if b[3] == 1 else b)
    plan = s.plans[k]
    plan[WIDE] = batch + 2
    for d in range(batch + 2):
        plan[WIDE + 1 + d] = wide[DIMS - batch - 2 + d]
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
    nin, constants = plan[INPUTS], 0
    for v in range(nin):
        if t.op[plan[V0 + VIEW_WIDTH * v]] == ACONSTANT:
            constants |= 1 << v
    reads = READS[plan[0] * 32 + nin * 8 + constants]
    for v in range(nin):
        j = t.in0[plan[V0 + VIEW_WIDTH * v]]
        if reads >> v & 1 and s.first <= j < s.np:
            s.plans[j, STATE] |= READ
    if reads & 8:
        plan[STATE] |= READ


@once
def write_record(p, q, code, arg, c, a, b, e):
    """The array record of op ``code`` (arg: an elementwise op's inputs, a sum's axes as bits, 0 all, then its ndim *
    2 ** 8, a scan's or sort's axis, a constant's ndim; c a 0-d constant's or pack's value, arg the pack's scalar
    record) of operands a, b and e (OPERAND tuples), its values the driver's: its plan, or a failure (< 0) f raises
    (``written``). Not a join's or a gather's (``write_moved``)."""
    s = arrays_from_pointer(q)
    s.row[0, :] = 0
    s.busy[0], s.busy[1], s.busy[2] = a[0], b[0], e[0]  # (their regions not given to the record written)
    if code == PACK and arg < 0:  # a number in a Var (not recorded): a constant
        code, arg = ACONSTANT, 0
    if code == ACONSTANT:  # a NumPy array's values are copied in by f
        k = open_record(p, q, ACONSTANT, arg, a, OL)
        s.aval[s.plans[k, 2]] = c
        return k
    if code == PACK:
        k = open_record(p, q, PACK, 0, ONES, 0)
        s.aval[s.plans[k, 2]], s.plans[k, PLACE] = c, arg
        return k
    if code == SUM or code == MAX or code == MIN or code == LOGSUMEXP:
        k = _summed(s, p, q, code, a, arg % 256, arg // 256)
    elif code == CUMSUM or code == CUMPROD or code == SORT:
        k = _along(s, p, q, code, a, arg)
    elif code in FACTORED:
        k = _factored(s, p, q, code, a, b)
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
    for v in range(plan[INPUTS]):
        if plan[V0 + VIEW_WIDTH * v + 2] == 0 and ops[plan[V0 + VIEW_WIDTH * v]] == ACONSTANT:
            constants |= 1 << v
    done = BY_NUMPY(address(plan), address(s.row), address(s.aval), s.aval.size, constants)
    return k if done == 0 else SINGULAR if done == 2 else FAILED


_WRITE = types.int64(types.voidptr, types.voidptr, types.int64, types.int64, types.float64,
                     *[types.int64] * (3 * (4 + 2 * DIMS)))


@once
def written(p, q, code, arg, c, a, b):
    """Record op ``code`` of operands a and b: written3's."""
    return written3(p, q, code, arg, c, a, b, b)


@once
def written3(p, q, code, arg, c, a, b, e):
    """Record op ``code`` of operands a, b and e (write_record or write_moved, called by address: its machine code is
    made once, not in every f, when first needed): (record, offset, lengths) of the new array record (its DIMS lengths,
    right-aligned), or the failure raised."""
    at = _writer(kernels.MOVE_AT if code == JOIN or code == GATHER else kernels.WRITE_AT)
    k = kernels._status(at, (p, q, code, arg, c, *a, *b, *e)) if at != 0 else UNMADE
    if k == JOINED:
        raise ValueError("all the input array dimensions except for the concatenation axis must match exactly "
                         "(tape.jit: an array record's np.concatenate)")
    if k == BROADCAST:
        raise ValueError("operands could not be broadcast together (tape.jit: shapes of an array op differ)")
    if k == INNER:
        raise ValueError("matmul: inner dimensions differ (tape.jit: the shapes of an @, np.dot or np.linalg.solve)")
    if k == SQUARE:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square (tape.jit: np.linalg)")
    if k == SINGULAR and code == CHOLESKY:
        raise np.linalg.LinAlgError("Matrix is not positive definite (tape.jit: np.linalg.cholesky)")
    if k == SINGULAR:
        raise np.linalg.LinAlgError("Singular matrix (tape.jit: np.linalg)")
    s = arrays_from_pointer(q)
    if k == UNMADE or s.pinned == UNMADE:
        raise WriterFailed()
    if k < 0:
        raise MemoryError("tape.jit: an array record's values could not be computed (out of memory)")
    plan = s.plans[k]
    return plan[1], plan[2], to_fixed_tuple(plan[LENGTHS:LENGTHS + DIMS], DIMS)


@jit
def data(p, q, x):
    """A NumPy array x (of at most DIMS axes: array_overloads.operand) as a constant record of its shape, as an
    operand."""
    o = (-1, 0, 0, x.ndim) + (ONES + x.shape)[LAST:] + ZEROS
    row, offset, lengths = written(p, q, ACONSTANT, x.ndim, 0.0, o, o)
    arrays_from_pointer(q).aval[offset:offset + x.size].reshape(x.shape)[...] = x  # (Numba's nd copy: of a C-ordered x
    # a block, 3x a loop over x.flat)
    return whole(row, offset, x.ndim, lengths)


@jit
def whole(record, offset, ndim, lengths):
    """The operand of a whole region (record, its offset, its DIMS lengths right-aligned, C order): OPERAND."""
    strides, step = np.zeros(DIMS, np.int64), 1
    for d in range(DIMS - 1, DIMS - 1 - ndim, -1):
        strides[d], step = step, step * lengths[d]
    return (record, offset, 0, ndim) + lengths + to_fixed_tuple(strides, DIMS)


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
    return make_array_record(p, q, r[0], r[1], 0, (r[2][-1],), (1,), life(q, r[0]))


@jit
def matrix(p, q, r):
    n = r[2]
    return make_array_record(p, q, r[0], r[1], 0, (n[-2], n[-1]), (n[-1], 1), life(q, r[0]))


def _of(ndim: int):
    """The maker of an array record of ndim axes (3 to DIMS) from written's (record, offset, lengths)."""
    @jit
    def make(p, q, r):
        lengths, strides, step = np.empty(ndim, np.int64), np.empty(ndim, np.int64), 1
        for d in range(ndim - 1, -1, -1):
            lengths[d], strides[d] = r[2][DIMS - ndim + d], step
            step *= lengths[d]
        return make_array_record(p, q, r[0], r[1], 0, to_fixed_tuple(lengths, ndim), to_fixed_tuple(strides, ndim),
                                 life(q, r[0]))
    return make


RESULT = (scalar, vector, matrix, *map(_of, range(3, DIMS + 1)))  # by ndim, from (p, q, (record, offset, lengths)):
# a 0-d one is the elem record reading it (a Var, as the Python recorder's wrap_view)


__all__ = ["ArrayRecordType", "Unfit", "new_arrays", "PLAN_WIDTH"]
