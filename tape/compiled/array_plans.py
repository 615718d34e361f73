"""After a tape.jit call that wrote array records: the plan rows f wrote (tape/compiled/array_records.py) made the
tape's Plans, and what the caller asks of views (a table for the plans, whether a view can be xs, the view f
returned)."""

from __future__ import annotations

import math

import numpy as np

from tape.compiled import array_gather
from tape.compiled.array_lives import CAP, CHECKED, FREED, LINK, READ, RECYCLE, STATE, TAKEN
from tape.compiled.array_records import GATHER
from tape.compiled.array_rows import AXES, PLACE, PLAN_WIDTH, V0, WIDE
from tape.sweeps import arenas
from tape.sweeps.driver import Plan, View

CHUNK = 256  # plan rows made Plans at a time (all at once, their lists of ints peaked above the Plans: a heat
# equation of 10^4 x 500 steps under tape.value_and_grad, peak tracemalloc bytes per element of state, 590 -> 476)
_SAME: dict[tuple[int, ...], tuple[int, ...]] = {}  # one tuple object for equal shapes and strides, as the Python
# recorder's views share theirs (a view's own two: the heat equation's peak 476 -> 383 bytes per element of state);
# emptied past 4,096 by adopt
_one = _SAME.setdefault  # (its method, not a function calling it: an MLP's gradient 5 µs less)
_NO_PLACES = np.zeros(0, np.int64)
_NO_PLACES.flags.writeable = False


def _inputs(r: list[int]) -> tuple[View, ...]:
    """The views plan row r reads."""
    views = []
    for f in range(V0, V0 + 7 * r[6], 7):
        ndim = r[f + 2]
        shape, strides = tuple(r[f + 5 - ndim:f + 5]), tuple(r[f + 7 - ndim:f + 7])
        views.append(View(r[f], r[f + 1], _one(shape, shape), _one(strides, strides)))
    return tuple(views)


def _places(row: int) -> np.ndarray:
    places = np.array([row], np.int64)
    places.flags.writeable = False
    return places


def plan_of(r: list[int]) -> Plan:
    """The Plan of plan row r."""
    shape = tuple(r[6 - r[3]:6])
    shape = _one(shape, shape)
    return tuple.__new__(Plan, (r[0], r[1], r[2], shape, _inputs(r) if r[6] else (),
                                tuple(r[AXES + 1:AXES + 1 + r[AXES]]),
                                array_gather.numbered()[r[PLACE]] if r[0] == GATHER else
                                _NO_PLACES if r[PLACE] < 0 else _places(r[PLACE]),
                                tuple(r[WIDE + 1:WIDE + 1 + r[WIDE]]) or shape))


def recycling(t, written: int) -> int:
    """Whether f gives away regions of array records on tape t (array_lives.py), and whether freed ones are NaN-filled:
    on tape.value_and_grad's own tapes (a traced tape keeps them: a Function replays from its records), unless its
    last call wrote fewer than arenas.EARLY elements (``written``; -1 none yet), from which the Python recorder
    collects (not where checked, as arenas.CHECK collects at every record): a small program keeps its few regions, and
    its records' lives cost nothing (bench/array_programs.py's MLP: 0.149-0.152 -> 0.138-0.142 CPU ms a gradient)."""
    if not t._recycling or t._traced or 0 <= written < arenas.EARLY and not arenas.CHECK:
        return 0
    return CHECKED if arenas.CHECK else RECYCLE


def adopt(t, plans: np.ndarray, first: int, count: int, aval: np.ndarray, na: int, released: np.ndarray,
          recycled: int) -> int:
    """Make plan rows first..count (written inside f) the tape's Plans, and its arena the one they were written in;
    where f ``recycled`` (recycling's), what the tape keeps of the regions f gave away (array_lives.py): the records a
    reverse step reads, those whose regions later records took, the capacities of the regions taken, and the records
    released after f's last record (watched, as VarArrays no handle holds). The elements f wrote."""
    if len(_SAME) > 4096:
        _SAME.clear()
    new: list[Plan] = []
    for k in range(first, count, CHUNK):
        new.extend(map(plan_of, plans[k:min(k + CHUNK, count)].tolist()))
    t._plans.extend(new)
    array_gather.adopted(t, first)
    rows = [p[1] for p in new]
    t._plan_rows.extend(rows)
    if aval is not t._aval:
        t._kept.drop()
        t._aval = aval
    if not recycled:  # (every record at the arena's top)
        written, t._n_arena = na - t._n_arena, na
        if t._recycling:  # their values stay where the reverse sweep reads them (tape/sweeps/arenas.py)
            t._read.update(rows)
        return written
    t._n_arena = na
    table = plans[first:count]
    sizes = np.multiply(table[:, 4], table[:, 5])
    written = int(sizes.sum())
    states = table[:, STATE].tolist()  # (lists: a small program's few plans 3 times as fast as NumPy's masks)
    t._read.update(r for r, state in zip(rows, states, strict=True) if state & READ)
    if any(state & FREED for state in states):  # (else none was given away: a small program's, whose runs fuse)
        state, row = table[:, STATE], table[:, 1]
        taken = state & TAKEN != 0
        t._freed.update(zip(row[taken].tolist(), table[taken, LINK].tolist(), strict=True))
        wider = table[:, CAP] != sizes
        t._caps.update(zip(row[wider].tolist(), table[wider, CAP].tolist(), strict=True))
        for r, offset, cap in zip(*table[(state & FREED != 0) & ~taken][:, [1, 2, CAP]].T.tolist(), strict=True):
            t._free.setdefault(cap.bit_length(), []).append((offset, cap, r))  # (as Arenas._collect frees one)
            t._freed[r] = -1
            t._n_free += cap
    t._watched.update(r for r in released.tolist() if not states[t._in0[r] - first] & (READ | FREED))
    return written


def plan_table(t, room: int) -> np.ndarray:
    """Room for the plans of a call: ``room`` rows past the tape's (grown inside when full)."""
    return np.empty((len(t._plans) + room, PLAN_WIDTH), np.int64)


def fits(view: View) -> bool:
    """Whether an array record's view can be f's xs: 1-d or 2-d, not empty."""
    return len(view.shape) in (1, 2) and math.prod(view.shape) > 0


def view_of(out: np.ndarray) -> View:
    """The view f returned (jit.record_output's numbers: record, start, shape, strides)."""
    record, start, *axes = out.tolist()
    return View(record, start, tuple(axes[:len(axes) // 2]), tuple(axes[len(axes) // 2:]))


__all__ = ["adopt", "plan_table", "fits", "view_of", "plan_of"]
