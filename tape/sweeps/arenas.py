"""The array side of a tape's storage: the plans of its array records and their value and adjoint arenas.

Each array record owns a region of both arenas (float64, 16 bytes per
element), handed out in record order, so a rewind gives back the regions of
the discarded records by moving one mark. The arenas double when full;
handles keep offsets, never pointers, so growth invalidates nothing.

A tape recorded afresh (tape.value_and_grad: recorded, swept backward once, dropped) recycles: when the
value arena is full, the region of a record that no handle holds any more (VarArrays and
ArrayConditions register theirs) and whose value no reverse step reads (each reader's ``back_reads``,
kernels/array_rule.py, known when the reader is recorded) goes to a later record of about its size. One
offset serves both arenas: the later record is born after the last reader of the earlier one, so its
adjoint is done before the earlier one's first contribution arrives (tape/sweeps/layout.py). A loop
whose reverse reads no values (a stencil) then records in a few regions; one whose reverse reads them
(a GRU) keeps those. Records that never had a handle (the inner records of composite operations) keep
their regions. A NumPy array read at every step is one constant while its numbers stay the same
(tape/records/array_records.constant, _same).

tape.trace's tape recycles too (``_recycle(traced=True)``): the Function made from it replays from its
constants and inputs alone, so those keep their regions and nothing is kept for a reverse sweep (this
tape never runs one); the other values are given away once no handle holds them (tape/function/replay.py
lays the Function's arena out from the records, not from this tape's offsets).
"""

from __future__ import annotations

import bisect
import math
import mmap
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tape.debug.nans import caller
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND, INPUT, RULE
from tape.kernels.ops import ELEM
from tape.sweeps import driver
from tape.sweeps import plans as _plans
from tape.sweeps.driver import Plan, View

_SPARE: list[np.ndarray] = []  # arenas of dead tapes, for the next tape (freshly mapped pages fault on first touch)
BORROWED = 2**16  # elements from which a borrowing tape reads a constant in place instead of copying it
SPARE_BYTES = 2**29  # kept at most: a loop recording afresh each call reuses its arenas
MOVED = 64  # elements from which move copies a leaf's region by itself (a slice costs about what gathering 100 does)
SCAN = 32  # freed regions of a size class that a record looks at, at most
EARLY = 2**16  # elements recorded since the last collection from which one comes before the arena is full (fewer:
# a small tape's few regions given away only unfuse its runs, fusion._recycled: an MLP's peak 353 -> 899 B/elem)
_READS: dict[tuple, tuple[bool, ...]] = {}  # back_reads by kind, axes and constant inputs (all it depends on; 3 µs)
_NO_PLACES = np.zeros(0, np.int64)  # the places of a plan that has none (read-only, as every plan's)
_NO_PLACES.flags.writeable = False
_PLACES: dict[tuple, np.ndarray] = {}  # a plan's places of up to SHARED elements, one object for equal ones (kept by
SHARED = 1024  # their bytes, 256 at most): plans compare by identity first (plans.same_plans: a call of
# tape.value_and_grad of a jitted f on a small x packs x's records each call, and the pack's places, new each call,
# were compared by NumPy: bench/array_programs.py's mixture, 50 µs a call)
CHECK = False  # tests: collect at every record, not only when the arena is full, and fill freed regions with NaN


_POOL = threading.RLock()  # tapes of several threads share the spares; reentrant: a tape's __del__ may run
# inside _take (a garbage collection), and only appends, so the place _take picked stays valid


def _renew_pool_lock() -> None:
    global _POOL
    _POOL = threading.RLock()  # a fork copies a lock as it was: held, maybe, by a thread the child lacks


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_pool_lock)


def _take(size: int) -> np.ndarray:
    """An uninitialized float64 buffer of at least ``size`` elements: a spare one if one fits."""
    with _POOL:
        fits = [k for k, a in enumerate(_SPARE) if size <= len(a) <= 4 * size]
        if fits:
            return _SPARE.pop(fits[0])
    return np.empty(size)


def recycle(*arrays: np.ndarray) -> None:
    """Keep arenas no tape uses any more for _take, within SPARE_BYTES; never one that something
    else still holds (a view of it): its references are then the owner's attribute and this call's."""
    for a in arrays:
        if a.nbytes >= 2**20 and a.base is None and sys.getrefcount(a) <= _OWNED:
            with _POOL:
                if a.nbytes + sum(b.nbytes for b in _SPARE) <= SPARE_BYTES:
                    _SPARE.append(a)


_OWNED = 4  # references to an arena passed here: the owner's attribute, the argument tuple, ``a``, getrefcount's


def untouched(size: int) -> np.ndarray:
    """``size`` zeros (float64) whose pages exist once written: an anonymous mapping of small pages (NumPy
    asks for huge pages, and one number written in each region of a long arena would fault it whole)."""
    return np.frombuffer(mmap.mmap(-1, 8 * size), np.float64) if size else np.zeros(0)


def move(plans: list[Plan], arena: np.ndarray, to: list[Plan], into: np.ndarray) -> None:
    """The numbers of the constants and inputs (params too) of plans in arena, to their regions in ``to``: small
    ones by one NumPy gather (a loop's 0-d constants: no Python step each), big ones a copy each."""
    code, old, size = _plans.regions(plans)
    new = _plans.regions(to)[1]
    leaf = (code == ACONSTANT) | (code == INPUT)
    small = leaf & (size < MOVED)
    into[_plans.ranges(new[small], size[small])] = arena[_plans.ranges(old[small], size[small])]
    for k in np.flatnonzero(leaf & ~small).tolist():
        into[new[k]:new[k] + size[k]] = arena[old[k]:old[k] + size[k]]


class Arenas:
    """Plans and arenas; mixed into tape.records.storage.Storage, which owns the record table."""

    _n: int
    _lines: dict[int, str] | None
    _op: np.ndarray
    _in0: np.ndarray
    _stamp: np.ndarray
    _gen: int
    _epoch: int

    _op_w: Any  # Storage's memoryview of _op
    _push: Callable[[int, int, int, float], int]  # Storage's: append one record
    _recycling = False  # whether it recycles regions (then handles call _register)
    _views = _schedules = None  # (a Function's caches: driver's getattr finds these at once)
    _traced = False  # recycling for tape.trace: constants and inputs kept, nothing pinned for a reverse sweep

    def _init_arenas(self) -> None:
        self._plans: list[Plan] = []
        self._plan_rows: list[int] = []  # the row of each plan, increasing (for rewinds)
        self._aval = np.empty(0)
        self._aadj = np.empty(0)
        self._n_arena = 0
        # big NumPy constants read in place, their regions left empty (tape.value_and_grad's own tapes,
        # which nothing can change between recording and the one reverse sweep): row -> array
        self._borrowed: dict[int, np.ndarray] = {}
        self._borrowing = False
        self._callees: list = []  # the Functions its call records call (tape/function/call_records.py), each once
        self._callee_places: list[np.ndarray] = []  # a call record's places: its Function's slot
        self._freed: dict[int, int] = {}  # recycled records: row -> the row that took its region (-1: none yet)
        self._numbers: dict[tuple[float, float], View] = {}  # 0-d constants that operators made, by value and sign
        self._recycling = False
        self._kept = driver.Kept()  # views of the arenas

    def _recycle(self, traced: bool = False) -> None:
        """Recycle regions from now on (see the module docstring): tape.value_and_grad's own tapes, and
        (traced) tape.trace's."""
        self._holds: list[tuple[weakref.ref, int]] = []  # (a handle, the record it holds)
        self._watched: set[int] = set()  # records that had a handle, not freed, no reverse step reads
        self._read: set[int] = set()  # records whose value a reverse step reads
        self._free: dict[int, list[tuple[int, int, int]]] = {}  # by capacity's bit length: (offset, capacity, row)
        self._caps: dict[int, int] = {}  # row -> capacity of a region taken from _free (else the record's size)
        self._n_free = 0  # elements in _free
        self._recorded = 0  # elements recorded since the last collection
        self._arrays: dict[int, View] = {}  # constants of NumPy arrays, by the array's id
        self._fixed = 0  # elements of regions never given away (inputs; a traced tape's constants too)
        self._recycling, self._traced = True, traced

    def _same(self, v: View, values: np.ndarray) -> bool:
        """Whether constant v still holds values' numbers, bit for bit (its region not given away)."""
        if v.record in self._freed or v.shape != values.shape:
            return False
        held = self._borrowed.get(v.record)
        if held is None:
            held = self._aval[self._plan(v.record).offset:][:values.size]
        return np.array_equal(held.view(np.int64), values.reshape(-1).view(np.int64))

    def _keep_all(self) -> None:
        """Stop recycling (a nested transform's symbolic sweep reads records by row, a rewind renumbers them)."""
        self._recycling = False

    def _register(self, handle: object, record: int) -> None:
        """Note that ``handle`` (a VarArray, an ArrayCondition) holds ``record``."""
        if record not in self._read and self._op_w[record] != INPUT and not (
                self._traced and self._op_w[record] == ACONSTANT):
            self._holds.append((weakref.ref(handle), record))
            self._watched.add(record)

    def _take_free(self, size: int) -> int:
        """The offset of a freed region of ``size`` to twice that (recorded for the next row), or -1."""
        for bits in (size.bit_length(), size.bit_length() + 1):
            found = self._free.get(bits, [])
            for k, (offset, cap, row) in enumerate(found[:SCAN] if found else ()):
                if size <= cap <= 2 * size:
                    del found[k]
                    self._freed[row] = self._n
                    self._caps[self._n] = cap
                    self._n_free -= cap
                    return offset
        return -1

    def _collect(self, inputs: tuple[View, ...]) -> int:
        """Free the regions of watched records no live handle (nor the record being pushed) holds: how many elements."""
        self._holds = [(ref, r) for ref, r in self._holds if ref() is not None]
        held = {r for _, r in self._holds}.union(v.record for v in inputs)
        freed = 0
        for r in [r for r in self._watched if r not in held]:
            self._watched.discard(r)
            p = self._plan(r)
            cap = self._caps.pop(r, p.size)
            self._free.setdefault(cap.bit_length(), []).append((p.offset, cap, r))
            self._freed[r] = -1
            freed += cap
            self._n_free += cap
            if CHECK:
                self._aval[p.offset:p.offset + cap] = np.nan
        return freed

    def _place(self, size: int, inputs: tuple[View, ...]) -> int:
        """Where a new record of ``size`` goes on a recycling tape: a freed region, else -1 (the arena's top).
        No region fits: a collection where the arena is full, or a quarter of its used part was recorded since the
        last one (else the top grows past dead regions: an LSTM's 30 steps 431 -> 286 states); one freeing under a
        quarter of a full arena, less its fixed part, lets it grow (a GRU would collect at every record)."""
        if not size:
            return -1
        start = self._take_free(size)
        if start >= 0 or not self._watched:
            return start
        full = self._n_arena + size > len(self._aval)
        if not (full or CHECK or self._recorded >= max(self._n_arena // 4, EARLY)):
            return -1
        self._recorded = 0
        if 4 * self._collect(inputs) < len(self._aval) - self._fixed and full and not CHECK:
            return -1
        return self._take_free(size)

    def _pin(self, plan: Plan) -> None:
        """Keep the values plan's reverse step reads (a recycling tape)."""
        ops = self._op_w
        constant = tuple([ops[v.record] == ACONSTANT for v in plan.inputs])
        key = (plan.code, plan.axes, constant)
        reads = _READS.get(key)
        if reads is None:
            reads = _READS[key] = RULE[plan.code].back_reads(plan, constant)
        for v, read, c in zip(plan.inputs, reads, constant, strict=False):
            if read:
                self._read.add(v.record)
                self._watched.discard(v.record)
            elif c and self._plan(v.record).shape and v.record not in self._read:
                self._watched.add(v.record)  # data read once (xs[t]); a 0-d one stays: fusion reads it as a number
        if reads[-1]:
            self._read.add(plan.row)

    def _push_array(self, code: int, shape: tuple[int, ...], inputs: tuple[View, ...] = (), axes: tuple[int, ...] = (),
                    places: np.ndarray | None = None, wide: tuple[int, ...] = (),
                    values: np.ndarray | None = None) -> int:
        """Append one array record and compute its elements (or store ``values``; a big constant's
        are borrowed where the tape is borrowing); return its row."""
        size = math.prod(shape)
        start = -1
        if self._recycling:
            start = self._place(size, inputs)
            self._recorded += size
            self._fixed += size * (code == INPUT or (self._traced and code == ACONSTANT))
        if start < 0:
            start = self._n_arena
            if start + size > len(self._aval):  # the adjoint arena follows at the next backward pass
                grown = _take(max(len(self._aval) + self._room(), start + size, 1024))
                grown[:start] = self._aval[:start]
                self._kept.drop()
                if not self._recycling:  # (a recycling tape grows seldom: its old arena is let go at once)
                    recycle(self._aval)
                self._aval = grown
            self._n_arena = start + size
        if places is None:
            places = _NO_PLACES
        else:
            places.flags.writeable = False
            if len(places) <= SHARED:
                if len(_PLACES) > 256:
                    _PLACES.clear()
                places = _PLACES.setdefault((places.shape, places.dtype.str, places.tobytes()), places)
        row = self._push(code, len(self._plans), 0xFFFFFFFF, 0.0)
        shape = tuple(shape)  # (a Plan made by tuple.__new__: 0.1 µs less than by its fields)
        plan = tuple.__new__(Plan, (code, row, start, shape, tuple(inputs), tuple(axes), places, tuple(wide) or shape))
        self._plans.append(plan)
        self._plan_rows.append(row)
        if self._recycling and inputs and not self._traced:
            self._pin(plan)
        if values is not None and self._borrowing and code == ACONSTANT and size >= BORROWED:
            self._borrowed[row] = np.ascontiguousarray(values).reshape(-1)
        elif values is not None:
            self._aval[start:start + size] = values.reshape(-1)
        else:
            driver.forward_recorded(self, plan)
        if self._lines is not None:
            self._lines[row] = caller()
        return row

    def _room(self) -> int:
        """How much the value arena grows by: as much again, or an eighth on a traced tape whose freed regions
        hold a quarter of it (for what no freed region fits: its 0-d constants, recorded each time; doubling for
        those, tracing np.pad's heat equation of 10^4 x 500 took 200 MB). (tape.value_and_grad's tapes double:
        a GRU recorded afresh growing by eighths collected more often: min 32-33 -> 34-35 CPU ms.)"""
        return len(self._aval) // 8 if self._traced and 4 * self._n_free >= len(self._aval) else len(self._aval)

    def _reserve(self, size: int) -> None:
        """Room for ``size`` elements before the value arena has to grow (a hint: growing copies)."""
        if size > len(self._aval):
            grown = _take(size)
            grown[:self._n_arena] = self._aval[:self._n_arena]
            self._kept.drop()
            recycle(self._aval)
            self._aval = grown

    def _adjoint_arena(self) -> None:
        """Give the adjoint arena room for every region (before a reverse sweep), keeping what it
        holds: accumulated gradients of array inputs survive. The regions' length, not the value
        arena's, which doubles as it grows (recording peaks, heat equation 10^4 x 500: 101 -> 96 kB per element
        of state; GRU 50 steps: 47 -> 42 kB)."""
        if len(self._aadj) < self._n_arena:
            grown = _take(self._n_arena)
            grown[:len(self._aadj)] = self._aadj
            self._kept.drop()
            recycle(self._aadj)
            self._aadj = grown

    def _rewind_arenas(self, mark: int) -> None:
        """Drop the plans of records mark and later, and give back their regions."""
        k = bisect.bisect_left(self._plan_rows, mark)
        self._keep_all()
        self._numbers = {}
        if k < len(self._plans):
            if not self._freed:  # (a recycled tape's regions are not in record order: it keeps its top)
                self._n_arena = self._plans[k].offset
            del self._plans[k:], self._plan_rows[k:]
            self._borrowed = {row: a for row, a in self._borrowed.items() if row < mark}
        if not self._plans:  # no call record left: let go of the Functions they called
            self._callees, self._callee_places = [], []

    def _plan(self, row: int) -> Plan:
        return self._plans[int(self._in0[row])]

    def _array_values(self, v: View) -> np.ndarray:
        """A copy of the elements of view v."""
        return driver.view(self, self._aval, v).copy()

    def _array_grads(self, v: View) -> np.ndarray:
        """The adjoints of view v as of the last backward pass; zero where it did not reach."""
        stamp = int(self._stamp[v.record])
        live = self._gen > 0 and (stamp == self._gen or (self._epoch < self._gen and stamp >= self._epoch
                                                         and self._op[v.record] == INPUT))
        if not live:
            return np.zeros(v.shape)
        return driver.view(self, self._aadj, v).copy()

    def __del__(self) -> None:
        try:
            self._kept.drop()
            recycle(self._aval, self._aadj)
        except Exception:  # noqa: BLE001  a tape that never got its arenas, or interpreter shutdown
            pass

    @property
    def n_arrays(self) -> int:
        """Array records on the tape."""
        return len(self._plans)

    def _arena_bytes(self) -> int:
        return self._aval.nbytes + self._aadj.nbytes


def described(s: driver.State, n: int) -> tuple[dict[int, list[int]], dict[int, tuple[int, ...]], dict, dict]:
    """For pictures and checks: the records each array or elem record reads, each array record's
    shape, its values and its adjoints (as of the last pass; views of the arenas)."""
    reads = {p.row: list(dict.fromkeys([v.record for v in p.inputs] + (
        p.places.tolist() if ARRAY_KIND[p.code] == "pack" else []))) for p in s._plans if p.row < n}
    for e in np.flatnonzero(s._op[:n] == ELEM).tolist():
        reads[e] = [int(s._in0[e])]
    plans = [p for p in s._plans if p.row < n]
    reached = [p for p in plans if s._stamp[p.row] == getattr(s, "_gen", 0)
               and len(s._aadj) >= driver.origin(s, s._aadj, int(s._in0[p.row])) + p.size]
    values = {p.row: driver.view(s, s._aval, driver.whole(p.row, p)) for p in plans}
    return reads, {p.row: p.shape for p in plans}, values, {p.row: driver.own(s, s._aadj, p) for p in reached}
