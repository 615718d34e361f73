"""A forward table's stretches: consecutive elementwise rows run as one pass that stores only what is read after it.

A heat step is five elementwise rows of one size (a stencil's adds, a scale, the update); row by row the
compiled forward stores each one's values, and the stores bound its time (0.15-0.2 ns an element stored:
/work/notes/s10/A-report.md), though nothing but the next row reads four of them, and the reverse reads none (an
add's partials read nothing, a scale's its number). So in a forward table (tape/sweeps/compiled.py) a STRETCH
header row stands before such rows: the driver calls its kernel (kernels/shaped.py's ``stretch``, one per shape,
whatever the rows' sizes and places), which computes every member's value per element in a local, with the same
IEEE operations as the rows', and stores only the members that a record after the stretch (an elem record too), an
output or a reverse step (the readers' ``back_reads``) reads: the others are left unwritten, as a fused run's
members are (``sweep_forward``: the sweeps that read every value run without runs, so without tables).

Members: rows of an op of ops.EXACT (the driver's own IEEE rules, not NumPy's loops), all of one size, every view
laid out as the output (an element read at its own index) or one number; a view of an earlier member is read as
that member's local. Forward, a LINED row of a 2-d space joins too where its other view is a line read by every line or
one number a line (the mixture's (points, 1) against (k,)), its lines all the stretch's LINED rows'; back, one number a
line only where it wants no adjoint (its sum back stays the row's; a line's is made in the pass). Per element, the
members run in order: where a stored member's region meets a region a member reads, the read must come first for every
element (the read at an index no lower, by a member no later), and a number, a line or one number a line read must meet
none; stored regions are apart. Otherwise the stretch is cut short.

The kernel is compiled when the tables holding it have run ``PAYBACK`` seconds without it (its compile, ~1 s; until
then the driver runs the rows one by one, the same numbers), or loaded at once where it is cached on disk (the
driver's load paid Numba's first).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import numpy as np

from tape.kernels import shaped
from tape.kernels._array_driver import (
    BASE,
    CALL,
    ELEMENTWISE,
    KIND,
    LINED,
    NIN,
    OP,
    OUT,
    OUT_STRIDES,
    REC,
    REGION,
    REGION_SIZE,
    ROW,
    SHAPE,
    SIZE,
    STRETCH,
    STRIDES,
    VIEW,
    VIEWS,
    WANT,
    WIDTH,
)
from tape.kernels.array_ops import ACONSTANT
from tape.kernels.compiling import Clock
from tape.kernels.ops import EXACT, OPS
from tape.sweeps import layout
from tape.sweeps import live as _live

ON = True  # whether forward tables get stretches (tests switch it off to compare)
SAME, LINE, EACH = -1, -2, -3  # a member's operand read from a view (not a member): its sources in a kernel shape
OTHER = -4  # a view read otherwise (no member reads one)


class Stretch:
    """A stretch shape's kernel, compiled (or loaded) once its Gate-like clock passes its payback."""

    PAYBACK = 1.0
    made: dict[tuple, Stretch] = {}

    def __init__(self, shape: tuple):
        self.shape, self.clock, self.address = shape, Clock(), 0
        self.kernel: Any = None
        self.on_disk = False

    @classmethod
    def of(cls, shape: tuple) -> Stretch:
        if shape not in cls.made:
            cls.made[shape] = cls(shape)
        return cls.made[shape]

    def ready(self) -> bool:
        """Whether the kernel is compiled (it is compiled now where the clock says it pays)."""
        if not self.address:
            if self.kernel is None:
                self.kernel = shaped.stretch_kernel(self.shape)
                self.on_disk = os.path.exists(getattr(self.kernel._cache._cache_file, "_index_path", ""))
            if self.clock.spent + self.clock.last >= (0.0 if self.on_disk else self.PAYBACK):
                self.kernel.compile()
                self.address = self.kernel.address
        return bool(self.address)


STRIDED = np.array([[VIEWS + VIEW * q + STRIDES + d for d in range(4)] for q in (0, 1)])  # views 0, 1's strides


def _sources(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the driver's _number of each row of a table: 1 or 2 where view 0 or 1 of a binary row is one element read by
    all, else 0; how each row's views 0, 1 are read: 0 its number, SAME laid out as its output, else (a LINED row's
    lines, axis 2 of a 2-d space) LINE one line's elements read by every line, or EACH one number a line; OTHER)."""
    strides = t[:, STRIDED]
    flat = np.logical_not(strides.any(2))
    number = np.where((t[:, NIN] == 2) & (t[:, SIZE] != 1), np.where(flat[:, 1], 2, np.where(flat[:, 0], 1, 0)), 0)
    lines = ((t[:, KIND] == LINED) & (t[:, SHAPE] == 1) & (t[:, SHAPE + 1] == 1))[:, None]
    line = (strides == (0, 0, 0, 1)).all(2)
    each = (strides[:, :, 3] == 0) & (strides[:, :, 2] != 0)
    how = np.where((strides == t[:, None, OUT_STRIDES:OUT_STRIDES + 4]).all(2), SAME,
                   np.where(lines & line, LINE, np.where(lines & each, EACH, OTHER)))
    return number, np.where(number[:, None] == (1, 2), 0, how)


EXACT_OPS = np.isin([op.name for op in OPS], EXACT)  # by opcode


class _Rows:
    """A table's rows as lists of ints, with each row's number, views' sources and back reads found by NumPy over the
    table (heat-pad's first value_and_grad: the rows asked a NumPy scalar at a time, stretched took 170-180 CPU-ms)."""

    def __init__(self, s: Any, t: np.ndarray, fits: np.ndarray, back: bool):
        number, how = _sources(t)
        sees = _reads_back(s)[s._in0[t[:, ROW]]]
        self.t, self.number, self.how, self.fits, self.sees = t.tolist(), number.tolist(), how.tolist(), \
            fits.tolist(), sees.tolist()
        self.s, self.back = s, back

    def joins(self, i: int, members: range) -> bool:
        """Whether row i may follow members (a range of rows) in a stretch: an op of EXACT, their size, each view laid
        out as its output (a member's then reads it whole) or its number, or forward, a LINED row's line or one number
        a line (_sources; not a member's), LINED rows' lines all alike."""
        row, t = self.t[i], self.t
        if not self.fits[i] or members and row[SIZE] != t[members[0]][SIZE]:
            return False
        if row[KIND] == LINED and any(t[m][KIND] == LINED and t[m][SHAPE:SHAPE + 4] != row[SHAPE:SHAPE + 4]
                                      for m in members):
            return False
        rows = {t[m][ROW] for m in members}
        for q in range(row[NIN]):
            how = self.how[i][q]
            if how == OTHER or how != SAME and (self.back and how == EACH and row[VIEWS + VIEW * q + WANT] or
                                               row[VIEWS + VIEW * q + REC] in rows):
                return False  # (a member's number or lines are made in the pass; one number a line's sum back: rows')
        return True


def _reads_back(s: Any) -> np.ndarray:
    """layout's back reads of each plan of s (its 3 views, then itself): kept in s._steps."""
    sees = s._steps.get("reads back")
    if sees is None:
        records = s._table[:, layout.RECORDS]
        constant = (records >= 0) & (s._op[np.maximum(records, 0)] == ACONSTANT)
        sees = s._steps["reads back"] = layout._reads_by_plan(s, s._table, constant)
    return sees


def _readers(s: Any) -> np.ndarray:
    """How many reads of each record there are (views of array records, elem records, packs' rows): kept in
    s._steps."""
    counts = s._steps.get("readers")
    if counts is None:
        counts = s._steps["readers"] = np.bincount(_live.reads(s._op, s._in0, s._plans)[1], minlength=len(s._op))
    return counts


def _shape(s: Any, r: _Rows, span: range) -> tuple | None:
    """The kernel shape of a stretch of these rows (in record order), or None where its places do not allow one
    pass (see the module's docstring)."""
    members = [r.t[i] for i in span]
    index = {m[ROW]: k for k, m in enumerate(members)}
    inside: Counter[int] = Counter()
    read_back: set[int] = set()
    spec = []
    for k, i in enumerate(span):
        m, sees = r.t[i], r.sees[i]
        sources = tuple(index.get(m[VIEWS + VIEW * q + REC], SAME if r.how[i][q] == 0 else r.how[i][q])
                        for q in range(m[NIN]))
        for q, j in enumerate(sources):
            if j >= 0:
                inside[members[j][ROW]] += 1
                if sees[q]:
                    read_back.add(j)
        if sees[3]:
            read_back.add(k)
        spec.append((m[OP], r.number[i], sources, tuple(bool(m[VIEWS + VIEW * q + WANT]) for q in range(m[NIN]))))
    outputs, readers = set(s._output_rows.tolist()), _readers(s)
    held = tuple(m[ROW] in outputs or readers[m[ROW]] != inside[m[ROW]] for m in members)
    n = members[0][SIZE]
    if r.back:
        if any(held[:-1]) or not all(inside[m[ROW]] for m in members[:-1]):
            return None  # (before _sends: arrays4k's back tables refuse 1,200 spans of 1,600 here)
        sends = _sends(members, spec, n)
        return None if sends is None else (True, tuple(spec), sends)
    stored = tuple(bool(k in read_back or held[k]) for k in range(len(members)))
    starts = sorted(m[OUT] for k, m in enumerate(members) if stored[k])
    if any(q - o < n for o, q in zip(starts, starts[1:], strict=False)):
        return None
    for k, (_, number, sources, _) in enumerate(spec):
        for q, j in enumerate(sources):
            f, how = VIEWS + VIEW * q, 0 if number == q + 1 else j  # (what it reads: a number, n elements, a line,
            b, line = members[k][f + BASE], members[k][SHAPE:SHAPE + 4]  # one number a line)
            length = {0: 1, SAME: n, LINE: line[3], EACH: (line[2] - 1) * members[k][f + STRIDES + 2] + 1}.get(how, 0)
            if j < 0 and any(b < w[OUT] + n and w[OUT] < b + length and not (how == SAME and k <= i and b >= w[OUT])
                             for i, w in enumerate(members) if stored[i]):
                return None
    return False, tuple(spec), stored


def _sends(members: list[np.ndarray], spec: list[tuple], n: int) -> tuple | None:
    """How each view back sends to the arena (last member first, a before b): (member, view, group), the views of
    the place most views read (and no view reads elsewhere in part) 0, their adds into one local an element, the
    others -1, added after the pass, view by view (the rows' order for every element), or where every view is a
    LINED row's line read by every line, shaped.SUMMED (summed back across lines in the pass, added after it); None
    where a number wants an adjoint (a sum back), a view's region meets the last member's adjoint (read as the pass
    goes) or lines summed back meet other views (beside the arena's stores in the pass LLVM vectorized neither:
    normalisation's 236 -> 257 us CPU)."""
    last, views = int(members[-1][OUT]), []
    for k in range(len(members) - 1, -1, -1):
        _, number, sources, wants = spec[k]
        for q, j in enumerate(sources):
            f = VIEWS + VIEW * q
            if j >= 0 or not wants[q]:
                continue
            region, size = int(members[k][f + REGION]), int(members[k][f + REGION_SIZE])
            if number == q + 1 or (region < last + n and last < region + size):
                return None
            views.append((k, q, int(members[k][f + BASE]), j == LINE))
    if any(line for *_, line in views):
        return tuple((k, q, shaped.SUMMED) for k, q, _, _ in views) if all(line for *_, line in views) else None
    alone = Counter(b for _, _, b, _ in views if all(c == b or abs(c - b) >= n for _, _, c, _ in views))
    kept = max(alone, key=alone.__getitem__, default=None)  # one place's adds in the pass (more stores there keep
    return tuple((k, q, 0 if b == kept else -1) for k, q, b, _ in views)  # LLVM from vectorizing it: 2-6x slower)


def stretched_all(s: Any, tables: list[list[np.ndarray]], back: bool) -> list[tuple[list[np.ndarray],
                                                                                dict[Stretch, list[int]],
                                                                                tuple[int, int]]]:
    """Each table's rows of a sweep (back: last first) with a STRETCH header before each stretch of two or more
    members, each shape's headers (their indices in the rows), whose CALL the kernel's address fills once it is ready
    (``fill``), and the scratch its kernels need back (rows, elements: a member's adjoint kept a row). The rows of all
    the sweep's tables are read by NumPy at once (tables of a few rows between NumPy steps: arrays4k's 1,600, small's
    1,000, cost ~70 us of NumPy calls each, one by one)."""
    if not ON or getattr(s, "_output_rows", None) is None or not tables:
        return [(rows, {}, (0, 0)) for rows in tables]
    counts = [len(rows) for rows in tables]
    t = np.array([row for rows in tables for row in (rows[::-1] if back else rows)], np.int64).reshape(-1, WIDTH)
    elementwise = (t[:, KIND] == ELEMENTWISE) | (t[:, KIND] == LINED)
    fits = elementwise & EXACT_OPS[np.where(elementwise, t[:, OP], 0)] & (t[:, SIZE] >= 2)  # (_Rows.joins)
    starts = np.cumsum(counts) - counts
    pairs = fits[1:] & fits[:-1]
    bounds = starts[1:][(starts[1:] > 0) & (starts[1:] < len(t))]
    pairs[bounds - 1] = False  # (no stretch across tables)
    ends = np.concatenate([[0], np.cumsum(pairs), [pairs.sum()]])  # (a table's pairs: its rows but the last's)
    joined = ends[starts + counts] > ends[starts]
    if not joined.any():  # no two rows that may join (tables of a few rows between NumPy steps)
        return [(rows, {}, (0, 0)) for rows in tables]
    order = _Rows(s, t, fits, back)
    return [_stretches(order, rows, start, back) if any_ else (rows, {}, (0, 0))
            for rows, start, any_ in zip(tables, starts.tolist(), joined.tolist(), strict=True)]


def _stretches(order: _Rows, rows: list[np.ndarray], start: int, back: bool) -> tuple[list[np.ndarray],
                                                                                     dict[Stretch, list[int]],
                                                                                     tuple[int, int]]:
    """stretched_all's of one table, whose rows (in the sweep's order) are order's from start on."""
    s = order.s
    need = (0, 0)
    spans: dict[int, tuple[int, Stretch]] = {}  # first row (in rows' order) -> (count, kernel)
    k, stop = start, start + len(rows)
    while k < stop:
        end = k
        while end < stop and order.joins(end, range(k, end)):
            end += 1
        shape = _shape(s, order, range(k, end)) if end - k >= 2 else None
        if shape is None:
            k += 1
            continue
        spans[stop - end if back else k - start] = (end - k, Stretch.of(shape))
        kept = len({j for j, _, group in shape[2] if group < 0}) if back else 0
        need = (max(need[0], kept), max(need[1], order.t[k][SIZE] if kept else 0))
        k = end
    out: list[np.ndarray] = []
    pending: dict[Stretch, list[int]] = {}
    for i, row in enumerate(rows):
        if i in spans:
            header = np.zeros(WIDTH, np.int64)
            header[KIND], header[SIZE] = STRETCH, spans[i][0]
            pending.setdefault(spans[i][1], []).append(len(out))
            out.append(header)
        out.append(row)
    return out, pending, need


def fill(table: np.ndarray, pending: dict[Stretch, list[int]], seconds: float) -> None:
    """Count a sweep's seconds on each pending shape's clock; set the headers of those now ready to their kernel."""
    for stretch in list(pending):
        stretch.clock.add(seconds)
        if stretch.ready():
            table[pending.pop(stretch), CALL] = stretch.address
