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
that member's local. Per element, the members run in order: where a stored member's region meets a region a
member reads, the read must come first for every element (the read at an index no lower, by a member no later),
and a number read once must meet none; stored regions are apart. Otherwise the stretch is cut short.

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
    NIN,
    OP,
    OUT,
    OUT_STRIDES,
    REC,
    ROW,
    SIZE,
    STRETCH,
    STRIDES,
    VIEW,
    VIEWS,
    WIDTH,
)
from tape.kernels.compiling import Clock
from tape.kernels.ops import EXACT, OPS
from tape.sweeps import layout
from tape.sweeps import live as _live

ON = True  # whether forward tables get stretches (tests switch it off to compare)


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


def _joins(row: np.ndarray, members: list[np.ndarray]) -> bool:
    """Whether row may follow members in a stretch: an op of EXACT, their size, each view laid out as its output or
    its number, a view of a member that member whole."""
    if row[KIND] != ELEMENTWISE or OPS[row[OP]].name not in EXACT or row[SIZE] < 2:
        return False
    if members and row[SIZE] != members[0][SIZE]:
        return False
    out, number = {int(m[ROW]): int(m[OUT]) for m in members}, _number(row)
    for q in range(row[NIN]):
        f = VIEWS + VIEW * q
        if q + 1 != number and (row[f + STRIDES:f + STRIDES + 4] != row[OUT_STRIDES:OUT_STRIDES + 4]).any():
            return False
        if out.get(int(row[f + REC]), row[f + BASE]) != row[f + BASE] or (row[f + REC] in out and q + 1 == number):
            return False
    return True


def _readers(s: Any) -> np.ndarray:
    """How many reads of each record there are (views of array records, elem records, packs' rows): kept in
    s._steps."""
    counts = s._steps.get("readers")
    if counts is None:
        counts = s._steps["readers"] = np.bincount(_live.reads(s._op, s._in0, s._plans)[1], minlength=len(s._op))
    return counts


def _shape(s: Any, members: list[np.ndarray]) -> tuple | None:
    """The kernel shape of a stretch of these rows, or None where a stored member's region meets a read out of
    order (see the module's docstring)."""
    index = {int(m[ROW]): k for k, m in enumerate(members)}
    inside: Counter[int] = Counter()
    read_back: set[int] = set()
    spec = []
    for k, m in enumerate(members):
        back = layout._reverse_reads(s, s._plans[s._in0[m[ROW]]])
        sources = tuple(index.get(int(m[VIEWS + VIEW * q + REC]), -1) for q in range(m[NIN]))
        for q, j in enumerate(sources):
            if j >= 0:
                inside[int(members[j][ROW])] += 1
                if back[q]:
                    read_back.add(j)
        if back[-1]:
            read_back.add(k)
        spec.append((int(m[OP]), _number(m), sources))
    outputs, readers = set(s._output_rows.tolist()), _readers(s)
    stored = tuple(bool(k in read_back or int(m[ROW]) in outputs or readers[m[ROW]] != inside[int(m[ROW])])
                   for k, m in enumerate(members))
    n = int(members[0][SIZE])
    writes = [(int(m[OUT]), k) for k, m in enumerate(members) if stored[k]]
    starts = sorted(o for o, _ in writes)
    if any(q - o < n for o, q in zip(starts, starts[1:], strict=False)):
        return None
    for k, (_, number, sources) in enumerate(spec):
        for q, j in enumerate(sources):
            b, length = int(members[k][VIEWS + VIEW * q + BASE]), 1 if number == q + 1 else n
            if j < 0 and any(b < o + n and o < b + length and not (length == n and k <= w and b >= o)
                             for o, w in writes):
                return None
    return tuple(spec), stored


def stretched(s: Any, rows: list[np.ndarray]) -> tuple[list[np.ndarray], dict[Stretch, list[int]]]:
    """A forward table's rows with a STRETCH header before each stretch of two or more members, and each shape's
    headers (their indices in the rows), whose CALL the kernel's address fills once it is ready (``fill``)."""
    if not ON or getattr(s, "_output_rows", None) is None:
        return rows, {}
    out: list[np.ndarray] = []
    pending: dict[Stretch, list[int]] = {}
    k = 0
    while k < len(rows):
        end = k
        while end < len(rows) and _joins(rows[end], rows[k:end]):
            end += 1
        shape = _shape(s, rows[k:end]) if end - k >= 2 else None
        if shape is None:
            out.append(rows[k])
            k += 1
            continue
        header = np.zeros(WIDTH, np.int64)
        header[KIND], header[SIZE] = STRETCH, end - k
        pending.setdefault(Stretch.of(shape), []).append(len(out))
        out += [header, *rows[k:end]]
        k = end
    return out, pending


def fill(table: np.ndarray, pending: dict[Stretch, list[int]], seconds: float) -> None:
    """Count a sweep's seconds on each pending shape's clock; set the headers of those now ready to their kernel."""
    for stretch in list(pending):
        stretch.clock.add(seconds)
        if stretch.ready():
            table[pending.pop(stretch), CALL] = stretch.address
