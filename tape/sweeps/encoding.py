"""The rows of the compiled sweeps' tables (tape/sweeps/compiled.py) for every plan of a state at once, by NumPy.

Each plan's fields are read once into arrays (shapes and strides padded to 4 axes, leading 1s and 0s), then each kind
of row is decided and written for all its plans together: no Python per plan but the one pass that reads the fields
(every gather's runs are found together too). What a row holds, and when a plan has none (then NumPy's step runs it):

- an elementwise record (ops.EXACT, ops.RULED, or ops.LOOPED where NumPy's loop was found): its space and output strides
  and each view's strides aligned to it (NumPy's broadcasting), adjacent axes that all walk as one merged (NumPy's
  iterator does so); LINED where a binary record's views are lines along axis 3 (``lined``); none past BROADCAST
  elements with a view broadcast (gathered and summed back), nor for a looped op whose loop reads its view, not laid out
  as the output, with an innermost axis stepping by other than 1;
- a sum (and a logsumexp, as lines): its input's space in C order, 0 output strides along the reduced axes;
- a matmul: 2-d blocks in C or Fortran order, where NumPy calls BLAS for it and both products back;
- a join: a row per input (its piece of the output), in input order; a gather: a row per run of its places;
- a select (np.where): two rows, each its condition and one branch over the output's space (as an elementwise
  record's views, broadcast branches summed back).
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Any

import numpy as np

from tape.kernels import _array_driver as kernels
from tape.kernels._array_driver import BASE, COPY, GATHER, LINED, LOGSUMEXP, MATMUL, SELECT, SUM, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import ACONSTANT, INPUT, RULE
from tape.kernels.ops import EXACT, LEAF, LOOPED, LOOPED_BACK, OPCODE, PAIRED, RULED
from tape.sweeps.driver import SHORT_NAME, State, starts
from tape.sweeps.plans import lengths

LARGE = 2 ** 20  # elements above which NumPy's step runs a sum (s7/D/sumsize.py: driven 0.62-0.71x its time at 2^13)
BROADCAST = 2 ** 16  # elements above which NumPy's step runs an elementwise op with a view broadcast (summed back)
# (a view laid out as the output, or one number, or a LINED row's, has no limit): measured in s4,
# replayed, driven / NumPy's steps at 2^14, 2^16, 2^17, 2^18 elements: same layouts 0.78-0.82, 0.63-0.86, 0.76-0.92,
# 0.64-1.05; a number 0.81-1.12; a row or column broadcast 0.89-0.91, 0.95-1.12, 1.07-1.17, 1.25-1.31 (load 6 on 2
# cores)
SPAN = 8  # elements a line, at least, of a LINED row (its gathers and sums back loop once a line)
RUN = 8  # elements per run of a gather's places, at least, for the driver to copy it: a row costs about a loop's
# start, ~10 ns, NumPy's take about 1 ns an element
PRODUCTS = 2 ** 22  # multiply-adds above which NumPy's step runs a matmul (s7/D/mmsize.py: 128 x 64 x 128 driven 0.93x
# its time, 128^3 1.01, 256^3 0.98; A's measurement: tape-bench mlp-array, 256 x 784 x 512, 1.33x hand driven)

KIND = np.array([RULE[c].compiled for c in range(len(SHORT_NAME))], np.int64)  # by opcode
CODE = np.array([OPCODE.get(name, 0) for name in SHORT_NAME], np.int64)  # the driver's opcode, by array opcode
IS_EXACT = np.array([name in EXACT for name in SHORT_NAME])
IS_RULED = np.array([name in RULED for name in SHORT_NAME])
IS_PAIRED = np.array([name in PAIRED for name in SHORT_NAME])
IS_COMPARE = np.array([RULE[c].compiled == kernels.ELEMENTWISE and not RULE[c].derivative
                       for c in range(len(SHORT_NAME))])  # (its values only: it sends nothing back)
PRIMED = np.array([name in LOOPED and LOOPED[name][0] != "a" for name in SHORT_NAME])  # (sigmoid's loop reads scratch)


def _looped() -> np.ndarray:
    """By array opcode: an op of ops.LOOPED (or PAIRED) whose NumPy loops (its partials' too) the driver found."""
    loops = {name: {ufunc, *LOOPED_BACK.get(name, ())[:1]} for name, (_, ufunc, _) in LOOPED.items()}
    loops |= {name: {ufunc, *(loop for _, loop, _ in sides)} for name, (ufunc, sides) in PAIRED.items()}
    return np.array([name in loops and loops[name] <= kernels.LOOPS for name in SHORT_NAME])


def _column(items: list[Any], name: str) -> np.ndarray:
    return np.fromiter(map(attrgetter(name), items), np.int64, len(items))


def _padded(tuples: list[tuple[int, ...]], fill: int) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, the tuples right-aligned in 4 columns after ``fill``s; those longer than 4 as 0s), a NumPy call per
    length, not per tuple."""
    n = lengths(tuples)
    out = np.full((len(tuples), 4), fill, np.int64)
    out[n > 4] = 0
    for k in range(1, 5):
        at = np.flatnonzero(n == k)
        if len(at):
            out[at, 4 - k:] = np.array([tuples[i] for i in at.tolist()], np.int64).reshape(-1, k)
    return n, out


def _c_order(shape: np.ndarray) -> np.ndarray:
    """C strides (elements) of padded shapes (driver.contiguous's)."""
    strides = np.ones_like(shape)
    for d in (2, 1, 0):
        strides[:, d] = strides[:, d + 1] * np.maximum(shape[:, d + 1], 1)
    return strides


def _contiguous(shape: np.ndarray) -> np.ndarray:
    """C strides of padded shapes, 0 along each axis of length 1."""
    return np.where(shape == 1, 0, _c_order(shape))


def _coalesced(shape: np.ndarray, strides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacent axes that every strides list (strides: plans x lists x 4) walks as one, merged (NumPy's iterator
    does so: a full sum of a contiguous block is one pairwise sum), padded back to 4 axes (leading 1s)."""
    m = len(shape)
    merged, msteps, count = np.ones_like(shape), np.zeros_like(strides), np.zeros(m, np.int64)
    every = np.arange(m)
    for d in range(4):
        on = shape[:, d] != 1
        last = np.maximum(count - 1, 0)
        same = (msteps[every, :, last] == strides[:, :, d] * shape[:, d, None]).all(1)
        join = on & (count > 0) & same
        merged[join, last[join]] *= shape[join, d]
        msteps[join, :, last[join]] = strides[join, :, d]
        new = on & ~join
        merged[new, count[new]] = shape[new, d]
        msteps[new, :, count[new]] = strides[new, :, d]
        count += new
    out_shape, out_steps = np.ones_like(shape), np.zeros_like(strides)
    for i in range(4):
        at = i < count
        out_shape[at, 4 - count[at] + i] = merged[at, i]
        out_steps[at, :, 4 - count[at] + i] = msteps[at, :, i]
    return out_shape, out_steps


class _Plans:
    """Every plan's fields as arrays: shape (n, 4), and per view (n, 3, ...)."""

    def __init__(self, s: State):
        plans = s._plans
        self.code, self.row, self.offset = (_column(plans, name) for name in ("code", "row", "offset"))
        shapes = list(map(attrgetter("shape"), plans))
        self.ndim, self.shape = _padded(shapes, 1)
        self.size = self.shape.prod(1)
        for k in np.flatnonzero(self.ndim > 4).tolist():
            self.size[k] = math.prod(shapes[k])
        axes = list(map(attrgetter("axes"), plans))
        _, first = _padded([a[:1] for a in axes], -1)
        self.axis = first[:, 3]
        self.bits = np.zeros(len(plans), np.int64)
        for k in np.flatnonzero(lengths(axes)).tolist():  # (sums and joins)
            self.bits[k] = sum(1 << a for a in axes[k])
        inputs = list(map(attrgetter("inputs"), plans))
        self.nin = lengths(inputs)
        self.rec, self.voff, self.vndim = (np.full((len(plans), 3), fill, np.int64) for fill in (-1, 0, 0))
        self.vshape, self.vsteps = np.ones((len(plans), 3, 4), np.int64), np.zeros((len(plans), 3, 4), np.int64)
        for q in range(3):
            at = np.flatnonzero(self.nin > q)
            views = [inputs[i][q] for i in at.tolist()]
            self.rec[at, q], self.voff[at, q] = _column(views, "record"), _column(views, "offset")
            self.vndim[at, q], self.vshape[at, q] = _padded(list(map(attrgetter("shape"), views)), 1)
            self.vsteps[at, q] = _padded(list(map(attrgetter("strides"), views)), 0)[1]
        present = self.rec >= 0
        record = np.where(present, self.rec, 0)
        plan = np.where(present, s._in0[record], 0).astype(np.int64)
        op = s._op[record]
        self.region = np.where(present, self.offset[plan], 0)
        self.region_size = np.where(present, self.size[plan], 0)
        self.base = self.region + self.voff
        self.want = present & (op != ACONSTANT)
        self.acc = present & ((op == LEAF) | (op == INPUT))
        borrowed = getattr(s, "_borrowed", None)
        self.lent = present & np.isin(record, list(borrowed)) if borrowed else np.zeros_like(present)

    def rows(self, k: np.ndarray, kind: int | np.ndarray) -> np.ndarray:
        """Rows of plans k, their head (kind, opcode, row, region, size, inputs) and views' places written."""
        t = np.zeros((len(k), WIDTH), np.int64)
        t[:, 0], t[:, 1], t[:, 2], t[:, 3], t[:, 4], t[:, 5] = (kind, CODE[self.code[k]], self.row[k], self.offset[k],
                                                                self.size[k], self.nin[k])
        for q in range(2):
            self.put(t, k, q, q)
        return t

    def put(self, t: np.ndarray, k: np.ndarray, q: int, slot: int) -> None:
        """Write view q of plans k into view ``slot`` of their rows t (record, place, region, wanted, accumulates)."""
        f = VIEWS + VIEW * slot
        t[:, f:f + 6] = np.stack([np.where(self.rec[k, q] >= 0, self.rec[k, q], 0), self.base[k, q],
                                  self.region[k, q], self.region_size[k, q], self.want[k, q], self.acc[k, q]], 1)


def _put(t: np.ndarray, shape: np.ndarray, steps: np.ndarray) -> None:
    """A row's space, output strides and its views' strides (steps: rows x (1 + views) x 4)."""
    t[:, 6:10], t[:, 10:14] = shape, steps[:, 0]
    for q in range(steps.shape[1] - 1):
        f = VIEWS + VIEW * q + kernels.STRIDES
        t[:, f:f + 4] = steps[:, 1 + q]


def _elementwise(P: _Plans, k: np.ndarray, looped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = k[(P.ndim[k] <= 4) & (IS_EXACT[P.code[k]] | IS_RULED[P.code[k]] | IS_COMPARE[P.code[k]] | looped[P.code[k]])]
    shape = P.shape[k]
    steps = np.zeros((len(k), 3, 4), np.int64)
    steps[:, 0] = _contiguous(shape)
    for q in range(2):  # NumPy's broadcasting: a view's axes are the last ones; 0 along its axes of length 1
        steps[:, 1 + q] = np.where((P.vshape[k, q] == 1) | (shape == 1) | (P.rec[k, q, None] < 0), 0, P.vsteps[k, q])
    shape, steps = _coalesced(shape, steps)
    out, views, two = steps[:, 0], steps[:, 1:], P.nin[k] == 2
    # NumPy's loop is called over elements as its step calls it over lines of unit steps (a view's in order or its
    # innermost axis's: each element's bits alone the same, kernels/ufuncs.py), or over a value first made in scratch
    # as its step makes it, whatever the view (sigmoid's exp(-|a|)); the LSTM's gates, column slices: 3.4 -> 1.7 CPU-ms
    fits = ~looped[P.code[k]] | PRIMED[P.code[k]] | (views[:, 0] == out).all(1) | (views[:, 0, 3] == 1)
    alike = ((views == out[:, None]) | (views == 0).all(2, keepdims=True)).all(2).all(1)
    fits &= ~IS_PAIRED[P.code[k]] | (alike & (views[:, 0] == out).all(1) & (P.size[k] > 1))  # (a binary loop: a laid
    # out as the output, b too or one number, which NumPy's step passes it at steps of 8 and 0, as the driver; not one
    # element, where NumPy's step reads a number at a step of 0, an element at 8, and the row cannot tell)
    lined = (~looped[P.code[k]] & ~IS_COMPARE[P.code[k]] & two & (out[:, 3] == 1) & (shape[:, 3] >= SPAN) & ~alike
             & ((views[:, 0, 3] != 0) | (views[:, 1, 3] != 0))
             & ((views[:, :, 3] == 1) | ((views[:, :, 3] == 0) & ((shape[:, 2, None] == 1) | (views[:, :, 2] != 0))))
             .all(1))
    broadcast = ((views != out[:, None]).any(2) & (views != 0).any(2) & ((views == 0) & (shape[:, None] > 1)).any(2))
    broadcast[:, 1] &= two  # (a view read strided, each element once, has no limit: conv1d's pooling of pairs,
    # 1.3 * 10^5 elements, replayed 9.8 -> 7.4 CPU-ms)
    fits &= lined | (P.size[k] <= BROADCAST) | ~broadcast.any(1)
    t = P.rows(k[fits], np.where(lined[fits], LINED, kernels.ELEMENTWISE))
    _put(t, shape[fits], steps[fits][:, :1 + 2])
    t[IS_COMPARE[P.code[k[fits]]], VIEWS + kernels.WANT::VIEW] = 0  # (a comparison sends its views nothing)
    return k[fits], t


def _selected(P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A select's two rows, each its condition (view 0) and one branch (view 1) over the output's space: b's where the
    condition is 0, then a's where it is not (back, a's first: the step's order); none past BROADCAST elements where a
    branch that wants an adjoint is broadcast (summed back), as an elementwise record's."""
    k = k[P.ndim[k] <= 4]
    shape = P.shape[k]
    steps = np.zeros((len(k), 4, 4), np.int64)
    steps[:, 0] = _contiguous(shape)
    for q in range(3):
        steps[:, 1 + q] = np.where((P.vshape[k, q] == 1) | (shape == 1), 0, P.vsteps[k, q])
    shape, steps = _coalesced(shape, steps)
    out, views = steps[:, 0], steps[:, 2:]
    broadcast = (views != out[:, None]).any(2) & ((views == 0) & (shape[:, None] > 1)).any(2) & P.want[k, 1:]
    fits = (P.size[k] <= BROADCAST) | ~broadcast.any(1)
    k, shape, steps = k[fits], shape[fits], steps[fits]
    rows = []
    for taken, q in ((0, 2), (1, 1)):
        t = P.rows(k, SELECT)
        P.put(t, k, q, 1)
        t[:, 1], t[:, 5], t[:, VIEWS + kernels.WANT] = taken, 2, 0  # (OP: which branch; the condition sends none)
        _put(t, shape, steps[:, [0, 1, 1 + q]])
        rows.append(t)
    return np.concatenate([k, k]), np.concatenate(rows), np.repeat(np.arange(2), len(k))


def _summed(P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(plans, rows) of sums in C order (else NumPy's iterator adds them in memory's order) whose trailing reduced
    axes the view walks as one run (else NumPy 2.4 adds copies of them in its buffer, 8,192 elements or as many whole
    lines at a time: _trailing)."""
    vshape, vsteps = P.vshape[k, 0], P.vsteps[k, 0]
    axis = np.arange(4) - (4 - P.vndim[k, 0, None])  # each padded axis's index in the input (negative: padding)
    reduced = (axis >= 0) & ((P.bits[k, None] >> np.maximum(axis, 0)) & 1 == 1)
    ordered, last = np.ones(len(k), bool), np.full(len(k), np.iinfo(np.int64).max)
    for d in range(4):
        on = vshape[:, d] != 1
        ordered &= ~on | (vsteps[:, d] < last)
        last = np.where(on, vsteps[:, d], last)
    ordered &= (last > 0) & (_trailing(vshape, vsteps, reduced) <= 1)
    fits = (P.vndim[k, 0] <= 4) & (vshape.prod(1) <= LARGE) & ordered
    k, vshape, vsteps, reduced = k[fits], vshape[fits], vsteps[fits], reduced[fits]
    steps = np.stack([_contiguous(np.where(reduced, 1, vshape)), np.where(vshape == 1, 0, vsteps)], 1)
    shape, steps = _coalesced(vshape, steps)
    t = P.rows(k, SUM)
    _put(t, shape, steps)
    return k, t


def _trailing(shape: np.ndarray, steps: np.ndarray, reduced: np.ndarray) -> np.ndarray:
    """By row: the runs of adjacent axes (as _coalesced merges them) among the trailing reduced axes of views
    (shape, steps; axes of length 1 aside): NumPy's inner loop adds those pairwise where they are one run."""
    runs, tail, step = np.zeros(len(shape), np.int64), np.ones(len(shape), bool), np.zeros(len(shape), np.int64)
    for d in range(3, -1, -1):
        on = shape[:, d] != 1
        tail &= reduced[:, d] | ~on
        now = tail & on
        runs += now & ((runs == 0) | (steps[:, d] != step))
        step = np.where(now, steps[:, d] * shape[:, d], step)
    return runs


def _lines(P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A logsumexp as lines (axis 2 of its space, its output's elements in order) each reduced along axis 3, whose
    elements are adjacent: its view in C order (as a sum's), where NumPy's step adds each line of its differences
    pairwise, and NumPy's exp and log loops found."""
    if not {"exp", "log"} <= set(kernels.LOOPS):
        return k[:0], np.zeros((0, WIDTH), np.int64)
    k, t = _summed(P, k)
    t[:, 0] = LOGSUMEXP
    lines = (t[:, 6] == 1) & (t[:, 7] == 1) & (t[:, 13] == 0) & ((t[:, 12] == 1) | (t[:, 8] == 1))
    lines &= t[:, VIEWS + kernels.STRIDES + 3] == 1
    return k[lines], t[lines]


def _block(strides: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Whether a matmul operand (row, column strides) is a block in C or Fortran order."""
    rs, cs = strides[:, 0], strides[:, 1]
    return (((cols == 1) | (cs == 1)) & ((rows == 1) | (rs == cols))) | (((rows == 1) | (rs == 1)) & ((cols == 1) |
                                                                                                      (cs == rows)))


def _matmul(P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2-d blocks in C or Fortran order, where NumPy's matmul calls dgemm, dgemv or its own loop for the product
    and both products back (not its dot: two of n, k, m 1; not its syrk: A and B at one place; kernels.blas
    found)."""
    if not kernels.BLAS:
        return k[:0], np.zeros((0, WIDTH), np.int64)
    k = k[(P.vndim[k, 0] == 2) & (P.vndim[k, 1] == 2)]
    n, inner, m = P.vshape[k, 0, 2], P.vshape[k, 0, 3], P.vshape[k, 1, 3]
    a, b = P.vsteps[k, 0, 2:], P.vsteps[k, 1, 2:]
    middle = np.sort(np.stack([n, inner, m], 1), 1)[:, 1]
    fits = (_block(a, n, inner) & _block(b, inner, m) & (middle >= 2) & (n * inner * m <= PRODUCTS)
            & (P.base[k, 0] != P.base[k, 1]))
    k = k[fits]
    t = P.rows(k, MATMUL)
    t[:, 6:10] = np.stack([n[fits], inner[fits], m[fits], np.ones(len(k), np.int64)], 1)
    for q, s in enumerate((a[fits], b[fits])):
        f = VIEWS + VIEW * q + kernels.STRIDES
        t[:, f:f + 2] = s
    return k, t


def _pieces(P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A join's rows, one per input (its piece of the output), in input order: the step's order back."""
    k = k[P.ndim[k] <= 4]
    out = _c_order(P.shape[k])
    axis = P.axis[k] + 4 - P.ndim[k]  # the joined axis, padded
    start = np.zeros(len(k), np.int64)
    plans, pieces, rows = [], [], []
    for q in range(3):
        on = P.rec[k, q] >= 0
        j, vshape = k[on], P.vshape[k[on], q]
        steps = np.stack([np.where(vshape == 1, 0, out[on]), np.where(vshape == 1, 0, P.vsteps[j, q])], 1)
        shape, steps = _coalesced(vshape, steps)
        t = P.rows(j, COPY)
        P.put(t, j, q, 0)
        t[:, 3], t[:, 4] = P.offset[j] + start[on] * out[on, axis[on]], vshape.prod(1)
        _put(t, shape, steps)
        t[:, VIEWS + VIEW:] = 0  # (a piece reads one view)
        plans.append(j)
        pieces.append(np.full(len(j), q))
        rows.append(t)
        start[on] += vshape[np.arange(len(j)), axis[on]]
    return np.concatenate(plans), np.concatenate(rows), np.concatenate(pieces)


CHUNK = 2 ** 16  # places of gathers taken at a time (in cache: heat's 500 pads of 10^4 places, 54 -> 11 ms)


def _changes(places: list[np.ndarray], first: np.ndarray) -> tuple[np.ndarray, ...]:
    """Where the step between places changes (np.diff(places, 2) not 0) within one gather (places[k] starts at
    first[k] of them all), and the two places after each change and after each gather's start; in batches of about
    CHUNK places (in cache), with a few NumPy calls a batch."""
    batch = first[:-1] // CHUNK
    cuts = [0, *(np.flatnonzero(np.diff(batch)) + 1).tolist(), len(places)]
    found: list[tuple[np.ndarray, ...]] = [(np.zeros(0, np.int64),) * 5]
    for a, b in zip(cuts, cuts[1:], strict=False):
        flat = np.concatenate(places[a:b])
        d = np.diff(flat)
        at = np.flatnonzero(d[1:] != d[:-1])
        starts = first[a:b] - first[a]
        at = at[at + 2 < np.append(starts[1:], len(flat))[np.searchsorted(starts, at, "right") - 1]]  # (in one)
        pick = np.minimum(np.concatenate([at + 2, at + 3, starts, starts + 1]), max(len(flat) - 1, 0))
        v = flat[pick] if len(flat) else np.zeros(len(pick), np.int64)  # (empty gathers' values unread)
        m = len(at)
        values = v[:m], v[m:2 * m], v[2 * m:2 * m + len(starts)], v[2 * m + len(starts):]
        found.append((at + first[a], *values))
    return tuple(np.concatenate(column) for column in zip(*found, strict=True))


def runs(places: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each gather's places as runs (its index, first element, first place, length, step between places), at most one
    per RUN elements (a row per few elements copies slower than NumPy's take: a gather with more has none), and
    whether each has them. A run ends after a change of step: greedy from the first element (np.add.at's order
    back is the elements'), the next run starts 2 past the first change at or after its start, so of consecutive
    changes every second ends one."""
    n = lengths(places)
    first = np.zeros(len(n) + 1, np.int64)
    np.cumsum(n, out=first[1:])
    at, place, after, place0, after0 = _changes(places, first) if len(n) else (np.zeros(0, np.int64),) * 5
    gather = np.searchsorted(first, at, "right") - 1
    most = np.maximum(1, n // RUN)
    fits = (np.bincount(gather, minlength=len(n)) <= 2 * most) & (n > 0)
    block = np.r_[True, at[1:] != at[:-1] + 1] if len(at) else np.zeros(0, bool)
    used = (np.arange(len(at)) - np.maximum.accumulate(np.where(block, np.arange(len(at)), 0))) % 2 == 0
    some = n > 0
    starts = np.concatenate([first[:-1][some], at[used] + 2])  # (global indices of the places)
    which = np.concatenate([np.flatnonzero(some), gather[used]])
    values = np.concatenate([place0[some], place[used]]), np.concatenate([after0[some], after[used]])
    order = np.lexsort((starts, which))
    starts, which, value, second = starts[order], which[order], values[0][order], values[1][order]
    stops = np.r_[starts[1:], 0][:len(starts)]
    last = np.r_[which[1:] != which[:-1], True][:len(which)]
    stops[last] = first[which[last] + 1]
    fits &= np.bincount(which, minlength=len(n)) <= most
    keep = fits[which]
    length = (stops - starts)[keep]
    return np.stack([which[keep], (starts - first[which])[keep], value[keep], length,
                     np.where(length > 1, (second - value)[keep], 0)], 1), fits


def _gathered(s: State, P: _Plans, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A gather's rows, one per run of its places in order; none where its places are scattered. The runs of places
    that are one object are found once (np.pad's in a loop: heat-pad's 500 gathers, 5 -> 0.1 ms)."""
    places = [s._plans[j].places for j in k.tolist()]
    one = {id(p): p for p in places}
    index = {key: i for i, key in enumerate(one)}
    which = np.array([index[id(p)] for p in places], np.int64) if len(one) < len(places) else None
    run, _ = runs(list(one.values()))
    if which is not None:  # each gather's runs: its places' object's, in order
        n = np.bincount(run[:, 0], minlength=len(one))
        first = np.cumsum(n) - n
        count = n[which]
        at = np.repeat(first[which] - np.cumsum(count) + count, count) + np.arange(count.sum())
        run = run[at]
        run[:, 0] = np.repeat(np.arange(len(places)), count)
    k = k[run[:, 0]]
    t = P.rows(k, GATHER)
    t[:, 3], t[:, 4] = P.offset[k] + run[:, 1], run[:, 3]
    t[:, 6:14] = (1, 1, 1, 0, 0, 0, 0, 1)
    t[:, 9] = run[:, 3]
    t[:, VIEWS + kernels.STRIDES:VIEWS + kernels.STRIDES + 4] = 0
    t[:, VIEWS + kernels.STRIDES + 3] = run[:, 4]
    t[:, VIEWS + BASE] += run[:, 2]
    t[:, VIEWS + VIEW:] = 0
    return k, t, np.arange(len(k)) - np.searchsorted(k, k)


def table(s: State) -> tuple[np.ndarray, np.ndarray]:
    """(rows, starts): the rows of every plan of s in plan order, plan k's rows[starts[k]:starts[k + 1]] (none where
    NumPy's step runs it)."""
    empty = np.zeros(len(s._plans) + 1, np.int64)
    if not s._plans:
        return np.zeros((0, WIDTH), np.int64), empty
    P = _Plans(s)
    kind = KIND[P.code]
    live = np.flatnonzero((kind != 0) & (P.nin > 0) & ~P.lent.any(1))
    parts = []
    for which, encode in ((kernels.ELEMENTWISE, lambda k: _elementwise(P, k, _looped())),
                          (SUM, lambda k: _summed(P, k)), (MATMUL, lambda k: _matmul(P, k)),
                          (LOGSUMEXP, lambda k: _lines(P, k)), (COPY, lambda k: _pieces(P, k)),
                          (GATHER, lambda k: _gathered(s, P, k)), (SELECT, lambda k: _selected(P, k))):
        k = live[kind[live] == which]
        if len(k):  # (each kind's NumPy calls cost a few µs even on no plans: a small program has few kinds)
            found = encode(k)
            parts.append(found if len(found) == 3 else (*found, 0))
    if not parts:
        return np.zeros((0, WIDTH), np.int64), empty
    plans = np.concatenate([p[0] for p in parts])
    sub = np.concatenate([np.broadcast_to(p[2], len(p[0])) for p in parts])
    order = np.lexsort((sub, plans))
    counts = np.bincount(plans, minlength=len(s._plans))
    starts = empty
    np.cumsum(counts, out=starts[1:])
    rows = np.concatenate([p[1] for p in parts])[order]
    rows[:, kernels.VOUT], rows[:, kernels.VBASE:kernels.VBASE + 2] = rows[:, kernels.OUT], rows[:, [
        VIEWS + BASE, VIEWS + VIEW + BASE]]
    return rows, starts


def back(s: State, rows: np.ndarray) -> np.ndarray:
    """table's rows for the reverse sweeps of s whose adjoints have a layout of their own (``_back_at``, by plan:
    tape/sweeps/layout.py's adjoints): OUT, and each view's BASE and REGION, where its adjoints are (VOUT and VBASE
    keep where its values are); rows themselves where s has none."""
    at = getattr(s, "_back_at", None)
    if at is None or not len(rows):
        return rows
    shift = at - starts(s)
    t = rows.copy()
    t[:, kernels.OUT] += shift[s._in0[t[:, kernels.ROW]]]
    for q in range(2):
        f = VIEWS + VIEW * q
        present = np.flatnonzero(t[:, f + kernels.REGION_SIZE] > 0)
        moved = shift[s._in0[t[present, f + kernels.REC]]]
        t[present, f + BASE] += moved
        t[present, f + kernels.REGION] += moved
    return t

