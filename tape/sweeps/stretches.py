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
that member's local. Forward, a LINED row of a 2-d space joins too where its other view is a line read by every line
or one number a line (the mixture's (points, 1) against (k,)), its lines all the stretch's LINED rows'; back only
where that view wants no adjoint (its sum back across lines stays the row's). Per element, the members run in
order: where a stored member's region meets a region a member reads, the read must come first for every element
(the read at an index no lower, by a member no later), and a number, a line or one number a line read must meet
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


def _number(row: np.ndarray) -> int:
    """The driver's _number: 1 or 2 where view 0 or 1 of a binary row is one element read by all, else 0."""
    if row[NIN] != 2 or row[SIZE] == 1:
        return 0
    for q in (1, 0):
        if not row[VIEWS + VIEW * q + STRIDES:VIEWS + VIEW * q + STRIDES + 4].any():
            return q + 1
    return 0


def _view(row: np.ndarray, q: int) -> int:
    """How a member row's view q is read: SAME laid out as its output, else (a LINED row's lines, axis 2 of a 2-d
    space) LINE one line's elements read by every line, or EACH one number a line; OTHER otherwise."""
    f, shape = VIEWS + VIEW * q, row[SHAPE:SHAPE + 4]
    strides = row[f + STRIDES:f + STRIDES + 4]
    if (strides == row[OUT_STRIDES:OUT_STRIDES + 4]).all():
        return SAME
    if row[KIND] != LINED or shape[0] != 1 or shape[1] != 1:
        return OTHER
    return LINE if (strides == (0, 0, 0, 1)).all() else EACH if strides[3] == 0 and strides[2] != 0 else OTHER


def _joins(row: np.ndarray, members: list[np.ndarray], back: bool) -> bool:
    """Whether row may follow members in a stretch: an op of EXACT, their size, each view laid out as its output (a
    member's then reads it whole) or its number, or forward, a LINED row's line or one number a line (_view; not a
    member's), LINED rows' lines all alike."""
    if row[KIND] not in (ELEMENTWISE, LINED) or OPS[row[OP]].name not in EXACT or row[SIZE] < 2:
        return False
    if members and row[SIZE] != members[0][SIZE]:
        return False
    if row[KIND] == LINED and any(m[KIND] == LINED and (m[SHAPE:SHAPE + 4] != row[SHAPE:SHAPE + 4]).any()
                                  for m in members):
        return False
    rows, number = {int(m[ROW]) for m in members}, _number(row)
    for q in range(row[NIN]):
        how = 0 if q + 1 == number else _view(row, q)  # (0: its number)
        if how == OTHER or how != SAME and (back and how and row[VIEWS + VIEW * q + WANT] or
                                           int(row[VIEWS + VIEW * q + REC]) in rows):
            return False  # (a member's number or lines are made in the pass; back, a line's sum back is the rows')
    return True


def _readers(s: Any) -> np.ndarray:
    """How many reads of each record there are (views of array records, elem records, packs' rows): kept in
    s._steps."""
    counts = s._steps.get("readers")
    if counts is None:
        counts = s._steps["readers"] = np.bincount(_live.reads(s._op, s._in0, s._plans)[1], minlength=len(s._op))
    return counts


def _shape(s: Any, members: list[np.ndarray], back: bool) -> tuple | None:
    """The kernel shape of a stretch of these rows (in record order), or None where its places do not allow one
    pass (see the module's docstring)."""
    index = {int(m[ROW]): k for k, m in enumerate(members)}
    inside: Counter[int] = Counter()
    read_back: set[int] = set()
    spec = []
    for k, m in enumerate(members):
        reads = layout._reverse_reads(s, s._plans[s._in0[m[ROW]]])
        sources = tuple(index.get(int(m[VIEWS + VIEW * q + REC]), SAME if q + 1 == _number(m) else _view(m, q))
                        for q in range(m[NIN]))
        for q, j in enumerate(sources):
            if j >= 0:
                inside[int(members[j][ROW])] += 1
                if reads[q]:
                    read_back.add(j)
        if reads[-1]:
            read_back.add(k)
        spec.append((int(m[OP]), _number(m), sources, tuple(bool(m[VIEWS + VIEW * q + WANT]) for q in
                                                             range(m[NIN]))))
    outputs, readers = set(s._output_rows.tolist()), _readers(s)
    held = tuple(int(m[ROW]) in outputs or readers[m[ROW]] != inside[int(m[ROW])] for m in members)
    n = int(members[0][SIZE])
    if back:
        sends = _sends(members, spec, n)
        if any(held[:-1]) or not all(inside[int(m[ROW])] for m in members[:-1]) or sends is None:
            return None
        return True, tuple(spec), sends
    stored = tuple(bool(k in read_back or held[k]) for k in range(len(members)))
    starts = sorted(int(m[OUT]) for k, m in enumerate(members) if stored[k])
    if any(q - o < n for o, q in zip(starts, starts[1:], strict=False)):
        return None
    for k, (_, number, sources, _) in enumerate(spec):
        for q, j in enumerate(sources):
            f, how = VIEWS + VIEW * q, 0 if number == q + 1 else j  # (what it reads: a number, n elements, a line,
            b, line = int(members[k][f + BASE]), members[k][SHAPE:SHAPE + 4]  # one number a line)
            length = {0: 1, SAME: n, LINE: line[3], EACH: (line[2] - 1) * members[k][f + STRIDES + 2] + 1}.get(how, 0)
            if j < 0 and any(b < int(w[OUT]) + n and int(w[OUT]) < b + length and not (
                    how == SAME and k <= i and b >= int(w[OUT])) for i, w in enumerate(members) if stored[i]):
                return None
    return False, tuple(spec), stored


def _sends(members: list[np.ndarray], spec: list[tuple], n: int) -> tuple | None:
    """How each view back sends to the arena (last member first, a before b): (member, view, group), the views of
    the place most views read (and no view reads elsewhere in part) 0, their adds into one local an element, the
    others -1, added after the pass, view by view (the rows' order for every element); None where a number wants an
    adjoint (a sum back) or a view's region meets the last member's adjoint (read as the pass goes)."""
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
            views.append((k, q, int(members[k][f + BASE])))
    alone = Counter(b for _, _, b in views if all(c == b or abs(c - b) >= n for _, _, c in views))
    kept = max(alone, key=alone.__getitem__, default=None)  # one place's adds in the pass (more stores there keep
    return tuple((k, q, 0 if b == kept else -1) for k, q, b in views)  # LLVM from vectorizing it: 2-6x slower)


def stretched(s: Any, rows: list[np.ndarray], back: bool) -> tuple[list[np.ndarray], dict[Stretch, list[int]],
                                                                   tuple[int, int]]:
    """A table's rows (back: last first) with a STRETCH header before each stretch of two or more members, each
    shape's headers (their indices in the rows), whose CALL the kernel's address fills once it is ready (``fill``),
    and the scratch its kernels need back (rows, elements: a member's adjoint kept a row)."""
    need = (0, 0)
    if not ON or getattr(s, "_output_rows", None) is None:
        return rows, {}, need
    order = rows[::-1] if back else rows
    spans: dict[int, tuple[int, Stretch]] = {}  # first row (in rows' order) -> (count, kernel)
    k = 0
    while k < len(order):
        end = k
        while end < len(order) and _joins(order[end], order[k:end], back):
            end += 1
        shape = _shape(s, order[k:end], back) if end - k >= 2 else None
        if shape is None:
            k += 1
            continue
        spans[len(rows) - end if back else k] = (end - k, Stretch.of(shape))
        kept = len({j for j, _, group in shape[2] if group < 0}) if back else 0
        need = (max(need[0], kept), max(need[1], int(order[k][SIZE]) if kept else 0))
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
