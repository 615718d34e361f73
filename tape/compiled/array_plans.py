"""After a tape.jit call that wrote array records: the plan rows f wrote (tape/compiled/array_records.py) made the
tape's Plans, and what the caller asks of views (a table for the plans, whether a view can be xs, the view f
returned)."""

from __future__ import annotations

import math

import numpy as np

from tape.compiled import array_gather
from tape.compiled.array_records import AXES, GATHER, PLACE, PLAN_WIDTH, V0, WIDE
from tape.sweeps.driver import Plan, View

_NO_PLACES = np.zeros(0, np.int64)
_NO_PLACES.flags.writeable = False


def _inputs(r: list[int]) -> tuple[View, ...]:
    """The views plan row r reads."""
    views = []
    for f in range(V0, V0 + 7 * r[6], 7):
        ndim = r[f + 2]
        views.append(View(r[f], r[f + 1], tuple(r[f + 5 - ndim:f + 5]), tuple(r[f + 7 - ndim:f + 7])))
    return tuple(views)


def _places(row: int) -> np.ndarray:
    places = np.array([row], np.int64)
    places.flags.writeable = False
    return places


def plan_of(r: list[int]) -> Plan:
    """The Plan of plan row r."""
    shape = tuple(r[6 - r[3]:6])
    return tuple.__new__(Plan, (r[0], r[1], r[2], shape, _inputs(r) if r[6] else (),
                                tuple(r[AXES + 1:AXES + 1 + r[AXES]]),
                                array_gather.numbered()[r[PLACE]] if r[0] == GATHER else
                                _NO_PLACES if r[PLACE] < 0 else _places(r[PLACE]),
                                tuple(r[WIDE + 1:WIDE + 1 + r[WIDE]]) or shape))


def adopt(t, plans: np.ndarray, first: int, count: int, aval: np.ndarray, na: int) -> None:
    """Make plan rows first..count (written inside f) the tape's Plans, and its arena the one they were written in."""
    new = list(map(plan_of, plans[first:count].tolist()))
    t._plans.extend(new)
    array_gather.adopted(t, first)
    rows = [p[1] for p in new]
    t._plan_rows.extend(rows)
    if aval is not t._aval:
        t._kept.drop()
        t._aval = aval
    t._n_arena = na
    if t._recycling:  # their values stay where the reverse sweep reads them (tape/sweeps/arenas.py)
        t._read.update(rows)


def plan_table(t) -> np.ndarray:
    """Room for the plans of a call (grown inside when full)."""
    return np.empty((len(t._plans) + 64, PLAN_WIDTH), np.int64)


def fits(view: View) -> bool:
    """Whether an array record's view can be f's xs: 1-d or 2-d, not empty."""
    return len(view.shape) in (1, 2) and math.prod(view.shape) > 0


def view_of(out: np.ndarray) -> View:
    """The view f returned (jit.record_output's numbers: record, start, shape, strides)."""
    record, start, *axes = out.tolist()
    return View(record, start, tuple(axes[:len(axes) // 2]), tuple(axes[len(axes) // 2:]))


__all__ = ["adopt", "plan_table", "fits", "view_of", "plan_of"]
