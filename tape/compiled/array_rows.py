"""A plan row of tape.jit's array records (array_records.py writes them) as the array driver's one-row table: its
layout, its op's kernel (``SLOT``), the row encoded as tape/sweeps/encoding.py encodes a plan (``encode``) and whether
it gives NumPy's bits (``by_driver``, else NumPy's rule): the forward's C function's (array_calls._forward_c)."""

from __future__ import annotations

import numpy as np

from tape.compiled.recording import once
from tape.kernels import _array_driver as kernels
from tape.kernels._array_driver import BASE, KIND, NIN, OP, OUT, OUT_STRIDES, ROW, SHAPE, SIZE, STRIDES, VIEW, VIEWS
from tape.sweeps import encoding

DIMS = 4  # the axes an array record inside tape.jit may have: the driver's rows' (tape/sweeps/encoding.py's 4)
LENGTHS = 4  # a plan row: code, row, offset, ndim, lengths (DIMS, right-aligned after 1s), inputs (INPUTS), 3 views
INPUTS = LENGTHS + DIMS  # of VIEW_WIDTH (record, offset, ndim, lengths, strides: each DIMS, right-aligned after 1s
V0, VIEW_WIDTH = INPUTS + 1, 3 + 2 * DIMS  # and 0s), axes (count, DIMS), pack's row, wide (count, DIMS), then
AXES = V0 + 3 * VIEW_WIDTH  # array_lives.py's capacity, state and link
PLACE = AXES + 1 + DIMS
WIDE = PLACE + 1
CAP = WIDE + 1 + DIMS
STATE, LINK = CAP + 1, CAP + 2
PLAN_WIDTH = LINK + 1
VL, VS = 3, 3 + DIMS  # in a view of a plan row: its lengths, its strides
PADS, SOURCE = V0 + VIEW_WIDTH, V0 + 2 * VIEW_WIDTH  # a gather's (one input), in its second view's place: mode,
# widths (before, after; 2 axes), its flat input's start and stride; in its third's: the plan of its input's record
# (array_plans.adopt's)
KINDS, CODES, EXACT = encoding.KIND, encoding.CODE, encoding.IS_EXACT | encoding.IS_RULED | encoding.IS_COMPARE  # by
# array opcode: the driver's kind of row, its opcode, whether any order of elements gives NumPy's bits (ops.EXACT,
# ops.RULED, a comparison), whether its NumPy loop was found
LOOPED = encoding._looped()
PRIMED = encoding.PRIMED  # by array opcode: a looped op whose loop reads a value first made in scratch (sigmoid's)
PAIRED = encoding.IS_PAIRED  # by array opcode: an op of a binary NumPy loop (ops.PAIRED)
LINES = {"exp", "log"} <= set(kernels.LOOPS)  # a logsumexp's row runs NumPy's exp and log loops (encoding._lines)
SLOT = np.where(KINDS == kernels.ELEMENTWISE, np.where(EXACT | LOOPED, kernels.VALUES + CODES, -1),
                np.where((KINDS == kernels.SUM) | (KINDS == kernels.MATMUL) | (KINDS == kernels.SELECT)
                         | (KINDS == kernels.LOGSUMEXP) & LINES, KINDS, -1))  # by array opcode: the slot of KERNELS
# whose kernel its driver's row runs (a select's: two rows, ``rows``); -1 where by_driver is never true (no row, or
# neither exact nor looped)


@once
def _steps(v):
    """Where strides list v of a row starts: the output's (0), then each view's."""
    return OUT_STRIDES if v == 0 else VIEWS + VIEW * (v - 1) + STRIDES


@once
def _coalesced(t, lists):
    """Row t's adjacent axes that its first ``lists`` strides lists all walk as one, merged, right-aligned after 1s
    (tape/sweeps/encoding.py's _coalesced, for one row: a full sum of a block is one pairwise sum)."""
    count = 0
    for d in range(4):
        n = t[SHAPE + d]
        if n == 1:
            continue
        join = count > 0
        for v in range(lists):
            join = join and t[_steps(v) + count - 1] == t[_steps(v) + d] * n
        at = count - 1 if join else count
        t[SHAPE + at] = t[SHAPE + at] * n if join else n
        for v in range(lists):
            t[_steps(v) + at] = t[_steps(v) + d]
        count = at + 1
    for i in range(3, -1, -1):
        src = i - 4 + count
        t[SHAPE + i] = t[SHAPE + src] if src >= 0 else 1
        for v in range(lists):
            t[_steps(v) + i] = t[_steps(v) + src] if src >= 0 else 0


@once
def encode(s, k):
    """Plan k's one-row table for the driver's forward, as tape/sweeps/encoding.py writes its kind (the views' records
    and bases are put_view's): an elementwise record's space is its shape, a sum's its input's with 0 output strides
    along the reduced axes (a logsumexp's too), a matmul's (n, inner, m); strides 0 along axes of length 1; then axes
    merged; a select's as an elementwise record's, its three views in row 0, then its two rows (``_selects``)."""
    plan, t = s.plans[k], s.row[0]
    code, nin = plan[0], plan[INPUTS]
    kind = KINDS[code]
    t[KIND], t[OP], t[ROW], t[OUT], t[SIZE], t[NIN] = kind, CODES[code], plan[1], plan[2], size(plan, LENGTHS), nin
    if kind == kernels.MATMUL:
        a, b = V0 + VL + DIMS - 2, V0 + VIEW_WIDTH + VL + DIMS - 1  # (a's n, inner; b's m)
        t[SHAPE], t[SHAPE + 1], t[SHAPE + 2], t[SHAPE + 3] = plan[a], plan[a + 1], plan[b], 1
        for v in range(2):
            f = V0 + VIEW_WIDTH * v + VS + DIMS - 2
            t[VIEWS + VIEW * v + STRIDES], t[VIEWS + VIEW * v + STRIDES + 1] = plan[f], plan[f + 1]
        return
    reduced = kind == kernels.SUM or kind == kernels.LOGSUMEXP
    if kind != kernels.ELEMENTWISE and kind != kernels.SELECT and not reduced:  # (no row: by_numpy)
        return
    space = V0 + VL if reduced else LENGTHS  # (the column of its first length)
    step = 1
    for d in range(DIMS - 1, -1, -1):  # the output's strides in the space: C order, 0 along reduced axes
        n = plan[space + d]
        if reduced:
            for a in range(plan[AXES]):
                n = 1 if plan[AXES + 1 + a] == d - DIMS + plan[V0 + 2] else n
        t[SHAPE + d], t[OUT_STRIDES + d] = plan[space + d], step if n != 1 else 0
        step *= n
    for v in range(nin):
        f, g = V0 + VIEW_WIDTH * v, VIEWS + VIEW * v + STRIDES
        for d in range(DIMS):
            t[g + d] = 0 if plan[f + VL + d] == 1 or plan[space + d] == 1 else plan[f + VS + d]
    _coalesced(t, 1 + nin)
    if kind == kernels.SELECT:
        _selects(s)


@once
def _selects(s):
    """A select's two rows after row 0 (its space and its condition's, a's and b's views: encode's, which row 0 keeps
    for by_numpy): b's where the condition (view 0) is 0, then a's where it is not (tape/sweeps/encoding.py's
    _selected)."""
    for r in range(1, 3):
        t = s.row[r]
        t[:] = s.row[0]
        t[OP], t[NIN] = r - 1, 2
        if r == 1:  # (row 1's branch: b, view 2)
            t[VIEWS + VIEW:VIEWS + 2 * VIEW] = s.row[0, VIEWS + 2 * VIEW:VIEWS + 3 * VIEW]


@once
def rows(s, k):
    """The rows of plan k's table that the driver's forward runs: a select's two (``_selects``), else row 0."""
    return s.row[1:3] if KINDS[s.plans[k, 0]] == kernels.SELECT else s.row[:1]


@once
def size(plan, at):
    """The product of the DIMS lengths from column ``at`` of a plan row."""
    n = 1
    for d in range(DIMS):
        n *= plan[at + d]
    return n


@once
def _block(rows, cols, rs, cs):
    """Whether a matmul operand (rows x cols, strides rs, cs) is a block in C or Fortran order (encoding._block)."""
    return (((cols == 1) or (cs == 1)) and ((rows == 1) or (rs == cols))) or (
        ((rows == 1) or (rs == 1)) and ((cols == 1) or (cs == rows)))


@once
def _layout(t, q):
    """(whether view q of row t is laid out as the output, whether it is one number read by all: strides all 0); a
    loop, not an array comparison: its machine code would import numba.np.linalg at every load."""
    alike, number = True, True
    for d in range(4):
        alike = alike and t[OUT_STRIDES + d] == t[VIEWS + VIEW * q + STRIDES + d]
        number = number and t[VIEWS + VIEW * q + STRIDES + d] == 0
    return alike, number


@once
def by_driver(s, k):
    """Whether the driver's row of plan k gives NumPy's bits, as tape/sweeps/encoding.py decides where a row runs
    (else NumPy's rule computes them, ``BY_NUMPY``): an op it has a row for (a looped one over a view laid out as its
    output or of lines of unit steps, or over a value made first in scratch: NumPy's loop called as its step calls it;
    the LSTM's gates, column slices: 120 calls back a call, 7.4 -> 4.6 ms), a sum's input in C order and not past
    LARGE whose trailing reduced axes are one run (a logsumexp's too, as lines: encoding._lines; the mixture's, 0.8 ms
    a call by NumPy's rule), a matmul's operands two blocks BLAS multiplies, of two axes (not NumPy's dot or syrk, nor
    a batched matmul)."""
    plan, t = s.plans[k], s.row[0]
    kind = t[KIND]
    if KINDS[plan[0]] == kernels.SELECT:  # (copies: NumPy's bits in any layout)
        return True
    if kind == kernels.ELEMENTWISE:
        alike = _layout(t, 0)[0]
        if PAIRED[plan[0]]:  # (a binary loop: a laid out as the output, b too or one number, encoding's rule)
            b_alike, b_number = _layout(t, 1)
            return LOOPED[plan[0]] and alike and (b_alike or b_number) and t[SIZE] > 1
        return EXACT[plan[0]] or LOOPED[plan[0]] and (alike or PRIMED[plan[0]] or t[VIEWS + STRIDES + 3] == 1)
    if kind == kernels.MATMUL:
        a, b = V0 + DIMS - 2, V0 + VIEW_WIDTH + DIMS - 2  # (a's view and b's, from their last two axes)
        n, inner, m = plan[a + VL], plan[a + VL + 1], plan[b + VL + 1]
        middle = max(min(n, inner), min(max(n, inner), m))
        return kernels.BLAS and middle >= 2 and plan[V0 + 2] == plan[V0 + VIEW_WIDTH + 2] == 2 and t[
            VIEWS + BASE] != t[VIEWS + VIEW + BASE] and _block(
            n, inner, plan[a + VS], plan[a + VS + 1]) and _block(inner, m, plan[b + VS], plan[b + VS + 1])
    if kind != kernels.SUM and kind != kernels.LOGSUMEXP or size(plan, V0 + VL) > encoding.LARGE:
        return False
    last = 1 << 62
    for d in range(DIMS):
        if plan[V0 + VL + d] != 1:
            if plan[V0 + VS + d] >= last:
                return False
            last = plan[V0 + VS + d]
    if kind == kernels.LOGSUMEXP:  # lines of unit steps along the last axis, one an output element, in order
        return last > 0 and t[SHAPE] == 1 and t[SHAPE + 1] == 1 and t[OUT_STRIDES + 3] == 0 and (
            t[OUT_STRIDES + 2] == 1 or t[SHAPE + 2] == 1) and t[VIEWS + STRIDES + 3] == 1
    runs, step, tail = 0, 0, True  # the trailing reduced axes: one run (tape/sweeps/encoding.py's _trailing)
    for d in range(DIMS - 1, -1, -1):
        if t[SHAPE + d] != 1:
            tail = tail and t[OUT_STRIDES + d] == 0
            if tail:
                runs += runs == 0 or t[VIEWS + STRIDES + d] != step
                step = t[VIEWS + STRIDES + d] * t[SHAPE + d]
    return last > 0 and runs <= 1
