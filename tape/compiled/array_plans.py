"""After a tape.jit call that wrote array records: the plan rows f wrote (tape/compiled/array_records.py) the tape's
plans (``Pending``: each made a Plan only where asked), and what the caller asks of views (a table for the plans,
whether a view can be xs, the view f returned)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from tape.compiled import array_gather
from tape.compiled.array_lives import CAP, CHECKED, FREED, LINK, READ, RECYCLE, STATE, TAKEN
from tape.compiled.array_records import GATHER
from tape.compiled.array_rows import AXES, DIMS, INPUTS, LENGTHS, PLACE, PLAN_WIDTH, SOURCE, V0, VIEW_WIDTH, VS, WIDE
from tape.sweeps import arenas
from tape.sweeps.driver import Plan, View, whole

_SAME: dict[tuple[int, ...], tuple[int, ...]] = {}  # _one's
_MADE: dict[bytes, Plan] = {}  # Pending._at's Plans by their row's bytes (not a gather's): value_and_grad of a jitted
# f writes the same rows each call (an MLP's _at 7.2 -> 2.0 µs a call, timed through wrappers: s24 E's sections.py)
_COUNTED: dict[tuple[int, bytes], int] = {}  # Pending.at_least's, by size and rows' bytes
_COUNTED_ROWS = 256  # rows, at most, of a table whose count is kept
_NO_PLACES = np.zeros(0, np.int64)
_NO_PLACES.flags.writeable = False
_NO_ROWS = np.zeros((0, PLAN_WIDTH), np.int64)


def _inputs(r: list[int]) -> tuple[View, ...]:
    """The views plan row r reads."""
    views = []
    for f in range(V0, V0 + VIEW_WIDTH * r[INPUTS], VIEW_WIDTH):
        ndim = r[f + 2]
        views.append(View(r[f], r[f + 1], _one(tuple(r[f + VS - ndim:f + VS])), _one(tuple(r[f + VIEW_WIDTH - ndim:
                                                                                           f + VIEW_WIDTH]))))
    return tuple(views)


def _one(axes: tuple[int, ...]) -> tuple[int, ...]:
    """One tuple object for equal shapes and strides, as the Python recorder's views share theirs (a view's own two: the
    heat equation's peak 476 -> 383 bytes per element of state)."""
    return _kept(_SAME, axes, axes)


def _kept(table: dict, key: Any, value: Any, most: int = 4096) -> Any:
    """table[key], set to value where it is not there (the table emptied past ``most`` entries)."""
    if len(table) > most:
        table.clear()
    return table.setdefault(key, value)


def _places(row: int) -> np.ndarray:
    places = np.array([row], np.int64)
    places.flags.writeable = False
    return places


def plan_of(r: list[int], source: Plan | None = None) -> Plan:
    """The Plan of plan row r (a gather's, given the Plan of its input, ``source``: reading its whole region, as the
    Python recorder's)."""
    shape = _one(tuple(r[INPUTS - r[3]:INPUTS]))
    return tuple.__new__(Plan, (r[0], r[1], r[2], shape, (whole(r[V0], source),) if source is not None else
                                _inputs(r) if r[INPUTS] else (), tuple(r[AXES + 1:AXES + 1 + r[AXES]]),
                                array_gather.places(r) if source is not None else _NO_PLACES if r[PLACE] < 0 else
                                _places(r[PLACE]), tuple(r[WIDE + 1:WIDE + 1 + r[WIDE]]) or shape))


class Pending:
    """A tape's plans once tape.jit adopted plan rows: the Plans made (``made``), then the rows of the plan table f
    wrote (``rows``, plans head on), each made a Plan where first read (a step of a Python sweep, a seed: ``one``),
    all where they are walked (a Function, a Python sweep over every plan, a plan recorded after them: ``listed``);
    two compared by their rows (tape/sweeps/compiled.py's Made.fits), kept for that once made. So tape.value_and_grad
    of a jitted f makes no Plan per record: the heat equation's 4,000 took 43 of its 81 ms a gradient (s23's notes)."""

    __slots__ = ("made", "head", "rows", "one", "listed", "key")
    __hash__ = None  # type: ignore[assignment]  # (mutable, as a list)

    def __init__(self, made: list[Plan]) -> None:
        self.made, self.head, self.rows, self.listed = made, len(made), _NO_ROWS, True
        self.one: dict[int, Plan] = {}
        self.key: bytes | None = None  # the rows' bytes up to CAP, once compared (_key)

    def __len__(self) -> int:
        return len(self.made) if self.listed else self.head + len(self.rows)

    def _at(self, k: int) -> Plan:
        """The Plan of row k (one made for the same row before, where it is not a gather's)."""
        p = self.one.get(k)
        if p is None:
            p = _MADE.get(key := self.rows[k, :CAP].tobytes())
            if p is None:
                r = self.rows[k].tolist()
                p = plan_of(r, self[r[SOURCE]] if r[0] == GATHER else None)
                p = p if r[0] == GATHER else _kept(_MADE, key, p)
            self.one[k] = p
        return p

    def __getitem__(self, k: Any) -> Any:
        made = self.made
        if type(k) is not slice and 0 <= k < len(made):  # (the Plans made: all where listed, else the head)
            return made[k]
        if self.listed or type(k) is slice:
            return self._all()[k]
        k = k + len(self) if k < 0 else k
        if not 0 <= k < len(self):
            raise IndexError("plan index out of range")
        return self.made[k] if k < self.head else self._at(k - self.head)

    def _all(self) -> list[Plan]:
        """Every plan made: the list."""
        if not self.listed:
            self.made.extend([self._at(k) for k in range(len(self.rows))])
            self.one, self.listed = {}, True
        return self.made

    def __iter__(self) -> Iterator[Plan]:
        return iter(self._all())

    def __delitem__(self, k: Any) -> None:
        """del plans[k:] (a rewind) cuts the rows, or the Plans before them; any other the list's."""
        cut = k.start or 0 if type(k) is slice and k.step is None and k.stop is None else -1
        if not self.listed and cut >= self.head:
            cut -= self.head
            self.rows, self.one, self.key = self.rows[:cut], {j: p for j, p in self.one.items() if j < cut}, None
        elif not self.listed and cut >= 0:
            del self.made[cut:]
            self.head, self.rows, self.one, self.listed, self.key = cut, _NO_ROWS, {}, True, None
        else:
            del self._all()[k]
            self.rows, self.key = self.rows[:max(cut - self.head, 0)], None
            self.head = min(self.head, len(self.made))

    def append(self, plan: Plan) -> None:
        self._all().append(plan)

    def adopt(self, rows: np.ndarray) -> None:
        """Plan rows written after these plans (the earlier rows made Plans first: a second call on one tape)."""
        self.head, self.rows, self.listed, self.key = len(self._all()), rows, False, None

    def copy(self) -> Pending:
        """These plans as they are now (the rows shared: a call's table is written once)."""
        copied = Pending(list(self.made))
        copied.head, copied.rows, copied.one, copied.listed = self.head, self.rows, dict(self.one), self.listed
        copied.key = self.key
        return copied

    def _rest(self) -> list[Plan]:
        """The plans after the rows (listed: recorded after them)."""
        return self.made[self.head + len(self.rows):] if self.listed else []

    def __eq__(self, other: object) -> bool:
        if type(other) is Pending and other.head == self.head and len(other.rows) == len(self.rows):
            h = self.head
            return self.made[:h] == other.made[:h] and self._key() == other._key() and self._rest() == other._rest()
        return isinstance(other, (list, Pending)) and self._all() == list(other)

    def _key(self) -> bytes:
        """The rows' bytes up to CAP (what a Plan is made of), kept: a Made's plans are compared at every call (an
        MLP's Made.fits 11.7 -> 5.7 µs, timed as _MADE's)."""
        self.key = self.rows[:, :CAP].tobytes() if self.key is None else self.key
        return self.key

    def at_least(self, size: int) -> int:
        """How many plans, not 0-d, have ``size`` elements or more (tape/sweeps/plans.py's at_least); the rows' count
        kept by their bytes (_key's, which Made.fits reads next) where they are few (an MLP's fusion.find 8.7 -> 2 µs
        a call, timed through wrappers)."""
        made = sum(p.size >= size and len(p.shape) > 0 for p in self.made)
        if self.listed or not len(self.rows):
            return made
        key = (size, self._key()) if len(self.rows) <= _COUNTED_ROWS else None
        counted = _COUNTED.get(key) if key is not None else None
        if counted is None:
            r = self.rows
            counted = int(np.count_nonzero((r[:, LENGTHS:INPUTS].prod(1) >= size) & (r[:, 3] > 0)))
            if key is not None:
                _kept(_COUNTED, key, counted)
        return made + counted


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
    """Make plan rows first..count (written inside f) the tape's plans (Pending), and its arena the one they were
    written in; where f ``recycled`` (recycling's), what the tape keeps of the regions f gave away (array_lives.py):
    the records a reverse step reads, those whose regions later records took, the capacities of the regions taken, and
    the records released after f's last record (watched, as VarArrays no handle holds). The elements f wrote. What
    the rows alone decide is kept by their bytes (_ADOPTED: a call of tape.value_and_grad writes the same rows each
    time; attention's adopt 48 -> 14 µs a call, timed through wrappers)."""
    table = plans[first:count]
    key = (first, recycled, table.tobytes(), released.tobytes()) if count - first <= _COUNTED_ROWS else None
    found = _ADOPTED.get(key) if key is not None else None
    if found is None:
        found = _adoption(t, table, first, released, recycled, key is not None)
        if key is not None and found[-1]:
            _kept(_ADOPTED, key, found, _ADOPTED_MOST)
    rows, written, read, freed, caps, free, n_free, watched, _ = found
    if type(t._plans) is not Pending:
        t._plans = Pending(t._plans)
    t._plans.adopt(table)
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
    t._read.update(read)
    t._freed.update(freed)
    t._caps.update(caps)
    lists = t._free
    for bits, region in free:  # (as Arenas._collect frees one)
        lists.setdefault(bits, []).append(region)
    t._n_free += n_free
    t._watched.update(watched)
    return written


_ADOPTED: dict[tuple, tuple] = {}  # _adoption's, by (first, recycled, the rows' bytes, the released rows' bytes)
_ADOPTED_MOST = 64  # tables kept, at most (cleared past it)


def _adoption(t, table: np.ndarray, first: int, released: np.ndarray, recycled: int, keyed: bool) -> tuple:
    """What adopt does with plan rows ``table`` (their gathers' inputs' plans written in): (their rows, the elements
    written, the rows a reverse step reads, the records freed (row, the row that took its region, or -1), wider
    capacities (row, capacity), the regions freed and not taken (bit length, (offset, capacity, row)) and their
    elements, the released records to watch, whether that depends on the rows alone, where ``keyed``: no gather's
    input's plan, no released record of another call)."""
    gathers = table[:, 0] == GATHER  # (each one's input's plan, by NumPy: Pending makes its Plan from it)
    table[gathers, SOURCE] = t._in0[table[gathers, V0]]
    rows = table[:, 1].tolist()
    alone = keyed and not gathers.any() and set(released.tolist()) <= set(rows)  # (asked where adopt would keep it)
    if not recycled:
        return rows, 0, (), (), (), (), 0, (), alone
    sizes = table[:, LENGTHS:INPUTS].prod(1)
    states = table[:, STATE].tolist()  # (lists: a small program's few plans 3 times as fast as NumPy's masks)
    read = [r for r, state in zip(rows, states, strict=True) if state & READ]
    freed: Any = ()
    caps: Any = ()
    free: Any = ()
    n_free = 0
    if any(state & FREED for state in states):  # (else none was given away: a small program's, whose runs fuse)
        state, row = table[:, STATE], table[:, 1]
        taken = state & TAKEN != 0
        wider = table[:, CAP] != sizes
        gone, offset, cap = table[(state & FREED != 0) & ~taken][:, [1, 2, CAP]].T.tolist()
        freed = itertools.chain(zip(row[taken].tolist(), table[taken, LINK].tolist(), strict=True),
                                zip(gone, [-1] * len(gone), strict=True))
        caps = zip(row[wider].tolist(), table[wider, CAP].tolist(), strict=True)
        free = zip(map(int.bit_length, cap), zip(offset, cap, gone, strict=True), strict=True)  # (by map: no Python
        n_free = sum(cap)  # step per region but adopt's; iterators where not kept: heat-pad's 1,000 regions)
        if keyed:
            freed, caps, free = list(freed), list(caps), list(free)
    watched = [r for r in released.tolist() if not states[t._in0[r] - first] & (READ | FREED)]
    return rows, int(sizes.sum()), read, freed, caps, free, n_free, watched, alone


def plan_table(t, room: int) -> np.ndarray:
    """Room for the plans of a call: ``room`` rows past the tape's (grown inside when full)."""
    return np.empty((len(t._plans) + room, PLAN_WIDTH), np.int64)


def fits(view: View) -> bool:
    """Whether an array record's view can be f's xs: of 1 to DIMS axes, not empty."""
    return 0 < len(view.shape) <= DIMS and math.prod(view.shape) > 0


def view_of(out: np.ndarray) -> View:
    """The view f returned (outputs.record_output's numbers: record, start, shape, strides)."""
    record, start, *axes = out.tolist()
    return View(record, start, tuple(axes[:len(axes) // 2]), tuple(axes[len(axes) // 2:]))


__all__ = ["adopt", "plan_table", "fits", "view_of", "plan_of", "Pending"]
