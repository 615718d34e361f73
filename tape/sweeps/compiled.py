"""A Function's stretches of array records as tables for the compiled sweeps (kernels/_array_driver.py).

tape/sweeps/steps.py keeps a Function's sweeps as lists of calls; where consecutive array records
are of kinds the driver runs (a Rule's ``compiled``: the elementwise ops of ops.EXACT and ops.LOOPED, sums,
matmuls by NumPy's own BLAS, joins and gathers, whose numbers it gives bit for bit) and their views
fit its rows (at most 4 axes; a sum's input in C order, as NumPy's iterator then adds; a matmul's
operands 2-d blocks in C or Fortran order; a gather's places in runs of one step), they become one
table and one Numba call per sweep, with no Python per record; any other record (and a fused run,
or a stretch of scalar records with work to do) ends the stretch and runs as before. The kernel is
used once it is compiled in this process, or once NumPy's sweeps have run ``LOAD`` seconds in the process where it is
cached on disk (``python -m tape warmup`` compiles it), or a Function with stretches for it ``PAYBACK`` where not: its
compile never lands on a first gradient with a cold cache, and a program pays it only when it has run about as
long as the compile takes (then at most doubling its time, once per machine).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from tape.kernels import _array_driver as kernels
from tape.kernels._array_driver import COPY, GATHER, LINED, LOGSUMEXP, MATMUL, SUM, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import ACONSTANT, INPUT, RULE
from tape.kernels.compiling import LOAD, Clock, Gate
from tape.kernels.ops import EXACT, LEAF, LOOPED, OPCODE
from tape.sweeps import driver, stretches
from tape.sweeps.driver import Plan, State, View

TABLE = 3  # what grouped() gives for a stretch of records in one table, beside driver's SCALARS, RUN, RECORD
PAYBACK = 25.0  # seconds of a Function's sweeps before it compiles the kernels itself (their compile: 25-28 CPU-s
# at load 6, was 17.7 before joins, gathers and the loops past 4,096 elements)
LARGE = 2 ** 20  # elements above which NumPy's step runs a sum (s7/D/sumsize.py: driven 0.62-0.71x its time at 2^13)
BROADCAST = 2 ** 16  # elements above which NumPy's step runs an elementwise op with a view gathered or summed back
# (a view laid out as the output, or one number, or a LINED row's, has no limit): /work/notes/s4/B/large.py,
# replayed, driven / NumPy's steps at 2^14, 2^16, 2^17, 2^18 elements: same layouts 0.78-0.82, 0.63-0.86, 0.76-0.92,
# 0.64-1.05; a number 0.81-1.12; a row or column broadcast 0.89-0.91, 0.95-1.12, 1.07-1.17, 1.25-1.31 (load 6 on 2
# cores)
SPAN = 8  # elements a line, at least, of a LINED row (its gathers and sums back loop once a line)
LINES = 4096  # elements of a logsumexp's or LINED row's lines in scratch at a time, at least one line (a block stays
# in cache)
RUN = 8  # elements per run of a gather's places, at least, for the driver to copy it: a row costs about a loop's
# start, ~10 ns, NumPy's take about 1 ns an element
PRODUCTS = 2 ** 22  # multiply-adds above which NumPy's step runs a matmul (s7/D/mmsize.py: 128 x 64 x 128 driven 0.93x
# its time, 128^3 1.01, 256^3 0.98; A's measurement: tape-bench mlp-array, 256 x 784 x 512, 1.33x hand driven)
CLOCK = Clock()  # seconds of sweeps by NumPy's steps in this process, every Function's (tape/sweeps/steps.py)
_gate = Gate((kernels.forward, kernels.reverse), (LOAD, math.inf), CLOCK)  # compiled in this process, or cached and
# NumPy's steps have run LOAD seconds (a small Function's first calls skip Numba's first load)


def ready(s: State, runs: dict[int, Any]) -> bool:
    """Whether s's sweeps use the compiled kernels now: they are compiled in this process, or cached and this
    process's sweeps by NumPy's steps have run LOAD seconds, or s's own have run PAYBACK seconds and s has
    stretches they would run (then they compile)."""
    if _gate.ready():
        return True
    driven = getattr(s, "_driven", None)
    if driven is None and getattr(s, "_swept", 0.0) >= PAYBACK:  # asked once
        driven = s._driven = any(kind == TABLE for kind, _ in grouped(s, driver.forward_walk(s, 0, len(s._op), runs)))
    return bool(driven)


def warm() -> None:
    """Compile (or load) the driver's kernels: ``python -m tape warmup`` calls it."""
    table, scratch = np.zeros((0, WIDTH), np.int64), np.zeros((4, 1))
    kernels.forward(table, np.zeros(1), scratch)
    kernels.reverse(table, np.zeros(1), np.zeros(1), np.zeros(1, np.uint32), 1, 1, scratch, True)


def _padded(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """shape and strides to 4 axes (leading 1s), a stride 0 along each axis of length 1."""
    shape4, strides4 = [1] * (4 - len(shape)) + list(shape), [0] * (4 - len(strides)) + list(strides)
    return shape4, [0 if n == 1 else k for n, k in zip(shape4, strides4, strict=True)]


def _coalesced(shape: list[int], *strides: list[int]) -> tuple[list[int], ...]:
    """Adjacent axes that every strides list walks as one, merged (NumPy's iterator does so: a full sum of a
    contiguous block is one pairwise sum), padded back to 4 axes."""
    axes = [[shape[d], *(k[d] for k in strides)] for d in range(4) if shape[d] != 1]
    merged: list[list[int]] = []
    for axis in axes:
        last = merged[-1] if merged else None
        if last is not None and all(last[1 + q] == axis[1 + q] * axis[0] for q in range(len(strides))):
            merged[-1] = [last[0] * axis[0], *axis[1:]]
        else:
            merged.append(axis)
    merged = [[1] + [0] * len(strides)] * (4 - len(merged)) + merged
    return tuple([axis[q] for axis in merged] for q in range(len(strides) + 1))


def _view(s: State, row: np.ndarray, q: int, v: View, strides: list[int]) -> None:
    p = s._plans[s._in0[v.record]]
    op = int(s._op[v.record])
    f = VIEWS + VIEW * q
    row[f:f + 6] = (v.record, p.offset + v.offset, p.offset, p.size, op != ACONSTANT, op in (LEAF, INPUT))
    row[f + 6:f + 10] = strides


def _lined(shape: list[int], out: list[int], views: list[list[int]]) -> bool:
    """Whether a binary record with a view neither laid out as its output nor one number runs LINED (any size): each
    view read along axis 3 in place (stride 1) or one number a line (stride 0; then not broadcast along axis 2, so
    that np.sum's trailing broadcast axes back are axis 3 alone), lines of SPAN elements or more."""
    if len(views) != 2 or out[3] != 1 or shape[3] < SPAN or all(v == out or not any(v) for v in views):
        return False
    return bool(views[0][3] or views[1][3]) and all(v[3] == 1 or (v[3] == 0 and (shape[2] == 1 or v[2] != 0))
                                                    for v in views)


def _elementwise(s: State, p: Plan, row: np.ndarray) -> bool:
    looped = p.name in LOOPED and LOOPED[p.name][1] in kernels.LOOPS
    if len(p.shape) > 4 or not (p.name in EXACT or looped):
        return False
    shape, out = _padded(p.shape, driver.contiguous(p.shape))
    views = []
    for v in p.inputs:
        lead = len(p.shape) - len(v.shape)  # NumPy's broadcasting: v's axes are the last ones
        views.append(_padded(p.shape, (0,) * lead + tuple(0 if n == 1 else k for n, k in zip(v.shape, v.strides,
                                                                                           strict=True)))[1])
    shape, out, *views = _coalesced(shape, out, *views)
    if looped and views[0] != out:  # NumPy's loop is called as its step calls it: on the elements in order
        return False
    lined = not looped and _lined(shape, out, views)
    if not lined and p.size > BROADCAST and any(strides != out and any(strides) for strides in views):
        return False
    row[0] = LINED if lined else row[0]
    row[6:10], row[10:14] = shape, out
    for q, (v, strides) in enumerate(zip(p.inputs, views, strict=True)):
        _view(s, row, q, v, strides)
    return True


def _sum(s: State, p: Plan, row: np.ndarray) -> bool:
    v = p.inputs[0]
    strides = [k for n, k in zip(v.shape, v.strides, strict=True) if n != 1] + [0]
    ordered = all(k > q for k, q in zip(strides, strides[1:], strict=False))
    if len(v.shape) > 4 or math.prod(v.shape) > LARGE or not ordered:
        return False  # not in C order: NumPy's iterator adds it in its memory's order
    kept = tuple(1 if k in p.axes else n for k, n in enumerate(v.shape))  # the output's strides: 0 along the axes
    shape, strides = _padded(v.shape, v.strides)
    shape, out, strides = _coalesced(shape, _padded(kept, driver.contiguous(kept))[1], strides)
    row[6:10], row[10:14] = shape, out
    _view(s, row, 0, v, strides)
    return True


def _lines(s: State, p: Plan, row: np.ndarray) -> bool:
    """A logsumexp as lines (axis 2 of its space, its output's elements in order) each reduced along axis 3, whose
    elements are adjacent: its view in C order (as a sum's), where NumPy's step adds each line of its differences
    pairwise, and NumPy's exp and log loops found."""
    if not (_sum(s, p, row) and {"exp", "log"} <= set(kernels.LOOPS)):
        return False
    lines = row[6] == row[7] == 1 and row[13] == 0 and (row[12] == 1 or row[8] == 1)
    return lines and row[VIEWS + kernels.STRIDES + 3] == 1


def _block(v: View, rows: int, cols: int) -> list[int] | None:
    """A matmul operand's (row, column) strides where it is a block in C or Fortran order, else None."""
    rs, cs = v.strides
    if ((cols == 1 or cs == 1) and (rows == 1 or rs == cols)) or ((rows == 1 or rs == 1) and (cols == 1 or cs == rows)):
        return [rs, cs, 0, 0]
    return None


def _matmul(s: State, p: Plan, row: np.ndarray) -> bool:
    """2-d blocks in C or Fortran order, where NumPy's matmul calls dgemm, dgemv or its own loop for the product
    and both products back (not its dot: two of n, k, m 1; not its syrk: A and B at one place; kernels.blas
    found)."""
    A, B = p.inputs
    if not kernels.BLAS or len(A.shape) != 2 or len(B.shape) != 2:
        return False
    (n, k), m = A.shape, B.shape[1]
    a, b = _block(A, n, k), _block(B, k, m)
    at, bt = (s._plans[s._in0[v.record]].offset + v.offset for v in (A, B))
    if a is None or b is None or sorted((n, k, m))[1] < 2 or n * k * m > PRODUCTS or at == bt:
        return False
    row[6:10] = (n, k, m, 1)
    _view(s, row, 0, A, a)
    _view(s, row, 1, B, b)
    return True


ENCODERS = {kernels.ELEMENTWISE: _elementwise, SUM: _sum, MATMUL: _matmul, LOGSUMEXP: _lines}


def _runs(places: np.ndarray) -> list[tuple[int, int, int, int]] | None:
    """A gather's places as runs (first element, first place, length, step between places), at most one per
    RUN elements, else None (a row per few elements copies slower than NumPy's take)."""
    n, most = len(places), max(1, len(places) // RUN)
    changes = np.flatnonzero(np.diff(places, 2))  # d[c] != d[c + 1], d the steps: a run ends at most once at each
    if len(changes) > 2 * most:  # (a jump and back are two changes: the loop below stays short)
        return None
    runs, e = [], 0
    while e < n:  # greedy, from the first element (np.add.at's order back is the elements')
        later = changes[np.searchsorted(changes, e):]
        end = min(n, int(later[0]) + 2) if len(later) else n
        runs.append((e, int(places[e]), end - e, int(places[e + 1] - places[e]) if end - e > 1 else 0))
        e = end
    return runs if len(runs) <= most else None


def _gathered(s: State, p: Plan, row: np.ndarray) -> list[np.ndarray] | None:
    """A gather's rows, one per run of its places in order; None where its places are scattered."""
    rows = []
    for start, place, n, step in _runs(p.places) or ():
        rows.append(row.copy())
        rows[-1][3:5], rows[-1][6:14] = (p.offset + start, n), (1, 1, 1, n, 0, 0, 0, 1)
        _view(s, rows[-1], 0, p.inputs[0], [0, 0, 0, step])
        rows[-1][VIEWS + kernels.BASE] += place
    return rows or None


def _pieces(s: State, p: Plan, row: np.ndarray) -> list[np.ndarray] | None:
    """A join's rows, one per input (its piece of the output), in input order: the step's order back."""
    if len(p.shape) > 4:
        return None
    rows, k, start, out = [], p.axes[0], 0, driver.contiguous(p.shape)
    for v in p.inputs:
        shape, strides = _padded(v.shape, v.strides)
        shape, to, strides = _coalesced(shape, _padded(v.shape, out)[1], strides)
        rows.append(row.copy())
        rows[-1][3:5], rows[-1][6:10], rows[-1][10:14] = (p.offset + start * out[k], math.prod(v.shape)), shape, to
        _view(s, rows[-1], 0, v, strides)
        start += v.shape[k]
    return rows


def encoded(s: State, p: Plan) -> list[np.ndarray] | None:
    """Record p's rows of a table (one, or a copy's pieces), or None where the driver does not run it; kept by a
    Function (``_encoded``), whose first sweeps ask for each record's 2-4 times (heat: 60% of a first call)."""
    cache = getattr(s, "_encoded", None)
    if cache is None:
        return _encode(s, p)
    if p.row not in cache:
        cache[p.row] = _encode(s, p)
    return cache[p.row]


def _encode(s: State, p: Plan) -> list[np.ndarray] | None:
    kind = RULE[p.code].compiled
    borrowed = getattr(s, "_borrowed", None) or {}
    if not kind or not p.inputs or any(v.record in borrowed for v in p.inputs):
        return None
    row = np.zeros(WIDTH, np.int64)
    row[:6] = (kind, OPCODE.get(p.name, 0), p.row, p.offset, p.size, len(p.inputs))
    if kind in (COPY, GATHER):
        return (_pieces if kind == COPY else _gathered)(s, p, row)
    return [row] if ENCODERS[kind](s, p, row) else None


def _idle(s: State, kind: int, what: Any) -> bool:
    """Whether a walk's item does nothing: a stretch of a few leaves with no elem record, an input's or a
    constant's forward."""
    if kind == driver.SCALARS:
        return not len(what[0]) and driver._leaves(s, what[-2], what[-1])
    return kind == driver.RECORD and not s._plans[s._in0[what]].inputs and RULE[s._op[what]].reads in ("views",
                                                                                                       "none")


def grouped(s: State, walk: Iterable[tuple[int, Any]], sweep: str = "") -> Iterator[tuple[int, Any]]:
    """A walk of tape/sweeps/driver.py with each stretch of records the driver runs as (TABLE, (table,
    scratch)), or for a sweep ("forward", "reverse") (TABLE, (table, scratch, its stretches' pending kernels:
    stretches.py)); idle items inside a stretch dropped."""
    rows: list[np.ndarray] = []
    idle: list[tuple[int, Any]] = []
    for kind, what in walk:
        found = encoded(s, s._plans[s._in0[what]]) if kind == driver.RECORD else None
        if found is not None:
            rows += found
            idle = []
            continue
        if rows and _idle(s, kind, what):
            idle.append((kind, what))
            continue
        if rows:
            yield _table(rows, s, sweep)
            yield from idle
            rows, idle = [], []
        yield kind, what
    if rows:
        yield _table(rows, s, sweep)
        yield from idle


# ops.LOOPED ops whose NumPy loop reads a value first made in scratch (sigmoid's exp(-|a|))
PRIMED = frozenset(OPCODE[name] for name, (x, _, _) in LOOPED.items() if x != "a")


def _scratched(row: np.ndarray) -> bool:
    """Whether an elementwise row uses scratch: it gathers a view or sums one back (a view not laid out as the
    output, unless it is a constant's one number, which the kernels load once: their ``_number``, view 1 first),
    or its NumPy loop reads a value made there (PRIMED)."""
    if row[1] in PRIMED:
        return True
    strides = [row[VIEWS + VIEW * q + kernels.STRIDES:VIEWS + VIEW * q + kernels.STRIDES + 4] for q in range(row[5])]
    number = -1 if row[5] != 2 or row[4] == 1 else 1 if not strides[1].any() else 0 if not strides[0].any() else -1
    return any((v != row[10:14]).any() and not (q == number and row[VIEWS + VIEW * q + kernels.WANT] == 0)
               for q, v in enumerate(strides))


def _lines_back(row: np.ndarray) -> int:
    """A LINED row's scratch: a block of its lines, and each view's sum back (the space's elements along the view's
    strided axes)."""
    shape = row[6:10]
    return max(int(shape[3]) * max(1, LINES // int(shape[3])), *(
        int(np.prod(shape[row[f:f + 4] != 0])) for f in (VIEWS + kernels.STRIDES, VIEWS + VIEW + kernels.STRIDES)))


def _table(rows: list[np.ndarray], s: State, sweep: str) -> tuple[int, Any]:
    """A table of rows and its scratch; for a sweep, the rows' stretches too."""
    rows, pending, (kept, wide) = stretches.stretched(s, rows, sweep == "reverse") if sweep else (rows, None, (0, 0))
    table = np.array(rows)
    products = table[table[:, 0] == MATMUL, 6:9]
    m, n = table[table[:, 0] == LOGSUMEXP, 8:10].T  # a logsumexp's lines and their length
    size = max(max((int(row[4]) for row in table if row[0] == kernels.ELEMENTWISE and _scratched(row)), default=1),
               max((_lines_back(row) for row in table if row[0] == LINED), default=1),
               int((products[:, 1] * np.maximum(products[:, 0], products[:, 2])).max(initial=1)),
               int(np.maximum(m, np.minimum(m * n, np.maximum(n, LINES))).max(initial=1)))
    scratch = np.empty((max(4, kept), max(size, wide)))  # operands (a matmul's product back; a logsumexp's block, sums
    # and tops), the contributions and their sum back; a stretch's members' adjoints kept back
    return TABLE, (table, scratch) if pending is None else (table, scratch, pending)


def forward(s: State, table: np.ndarray, scratch: np.ndarray, pending: dict | None = None) -> None:
    """The table's forward sweep (timed while its stretches' kernels are pending)."""
    start = time.perf_counter() if pending else 0.0
    _gate.call(kernels.forward, table, s._aval, scratch)
    if pending:
        stretches.fill(table, pending, time.perf_counter() - start)


def reverse(s: State, table: np.ndarray, scratch: np.ndarray, pending: dict | None, gen: int, keep: int,
            check: bool) -> bool:
    """The table's reverse sweep (timed while its stretches' kernels are pending); whether it made a matmul's
    products back unchecked (as a NumPy step would: tape/function/array_replay.py sweeps again, checked, on a NaN)."""
    start = time.perf_counter() if pending else 0.0
    unchecked = bool(_gate.call(kernels.reverse, table, s._aval, s._aadj, s._stamp, gen, keep, scratch, check))
    if pending:
        stretches.fill(table, pending, time.perf_counter() - start)
    return unchecked
