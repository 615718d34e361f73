"""The sweeps of a tape that holds array records: scalar runs in Numba, array records in NumPy.

An array record (kernels/array_ops.py) is a row of the record table whose
``in0`` is its place in the side table of plans. A plan says where its
elements live in the value and adjoint arenas (one float64 array each, the
records' regions one after another) and which views of earlier records it
reads. The forward sweep walks the records in order: each stretch of scalar
records between two array records is one call of the Numba forward kernel,
each array record one NumPy call over views of the arena (BLAS for matmul,
NumPy's SIMD loops for exp and tanh). The reverse sweep walks back the same way.

Adjoints follow the scalar rules at array granularity: a record's stamp (the
scalar ``stamp`` column) says whether its region holds this pass's adjoint.
The first contribution to a stale region assigns when it covers the region
whole, and otherwise zeroes the region once: never a memset per pass. The
structural-zero rule holds per element: a product g * d with g == 0 or
d == 0 adds nothing, so the unselected side of ``where`` never leaks NaN
(products are checked for NaN and redone with that mask where one appears).

The sweeps read a state duck-typed by tape/records/storage.py (a Tape) and
tape/function/replay.py (a Function): _op, _in0, _in1, _val, _adj, _stamp, _consts,
_plans, _aval, _aadj.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from tape.kernels import _sweeps
from tape.kernels.array_ops import ACONSTANT, INPUT, NAME, RULE
from tape.kernels.array_rule import unbroadcast
from tape.kernels.ops import ARRAY_BASE, ELEM, IS_ARRAY, IS_LEAF, LEAF
from tape.kernels.twins import Twin

State = Any  # a Storage or a Replay: the attributes named in the module docstring
forward_sweep, forward_range = Twin(_sweeps.forward_sweep, globals()), Twin(_sweeps.forward_range, globals())
reverse_range = Twin(_sweeps.reverse_range, globals())  # (the scalar records between array records: a small
# array program's first gradient, an MLP's, runs NumPy's steps while the array driver is not loaded)


class View(NamedTuple):
    """Elements of an array record's region: offset and strides count elements from its start."""

    record: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]


SHORT_NAME = [name.removeprefix("array ") for name in NAME]  # by opcode: read at every record of a sweep


class Plan(NamedTuple):
    """One array record: its opcode and row, its region, and what it reads."""

    code: int
    row: int
    offset: int  # first element of its region in the arenas
    shape: tuple[int, ...]
    inputs: tuple[View, ...] = ()
    axes: tuple[int, ...] = ()  # the reduced axes of the input; scan, sort: the one axis
    places: np.ndarray = np.zeros(0, np.int64)  # gather: places in the input's region; pack: scalar rows
    wide: tuple[int, ...] = ()  # matmul: the output's shape with 1-d operands widened to 2-d

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def name(self) -> str:
        return SHORT_NAME[self.code]


@functools.lru_cache(maxsize=4096)
def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of this shape."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def whole(record: int, plan: Plan) -> View:
    """The view of a record's entire region, in its own shape."""
    return View(record, 0, plan.shape, contiguous(plan.shape))


def region(arena: np.ndarray, plan: Plan, start: int = -1) -> np.ndarray:
    """A record's elements in an arena (from start, where given: origin()'s), in its shape."""
    start = plan.offset if start < 0 else start
    return arena[start:start + math.prod(plan.shape)].reshape(plan.shape)


def origin(s: State, arena: np.ndarray, k: int) -> int:
    """Where plan k's region starts in arena: its offset, but in the adjoint arena of a Function whose adjoints have
    a layout of their own (``_back_at``, tape/sweeps/layout.py's adjoints) the offset there."""
    back = getattr(s, "_back_at", None)
    return int(back[k]) if back is not None and arena is s._aadj else s._plans[k].offset


def own(s: State, arena: np.ndarray, p: Plan) -> np.ndarray:
    """Record p's region of an arena (from its origin), kept, as views are, by a Function and by a tape (Kept)."""
    cache = getattr(s, "_views", None)
    if cache is not None and (arena is s._aval or arena is s._aadj):
        key = (p.row, arena is s._aval)
        found = cache.get(key)
        if found is None:
            found = cache[key] = region(arena, p, origin(s, arena, int(s._in0[p.row])))
        return found
    views, start = kept(s, arena), origin(s, arena, int(s._in0[p.row]))
    if views is None:
        return region(arena, p, start)
    return kept_view(views, arena, start, p.shape, contiguous(p.shape))


def kept_view(views: dict[tuple, np.ndarray], arena: np.ndarray, start: int, shape: tuple[int, ...],
              strides: tuple[int, ...]) -> np.ndarray:
    """arena's elements from ``start`` (shape, element strides), looked up in or added to views (Kept's)."""
    key = (start, shape, strides)
    found = views.get(key)
    if found is None:
        found = views[key] = np.ndarray(shape, np.float64, arena, 8 * start, _bytes(strides))
    return found


KEPT = 1024  # views of an arena a tape keeps (about 300 bytes each)


def kept(s: State, arena: np.ndarray) -> dict[tuple, np.ndarray] | None:
    """A tape's kept views of arena (Kept.of), None for other states."""
    found = getattr(s, "_kept", None)
    return found.of(s, arena) if found is not None else None


class Kept:
    """A tape's views of its two arenas by (element start, shape, strides): each dict kept while its arena is the same
    object, and at most KEPT long. A lookup costs 0.1 µs, a view built 0.6-1.8, and a loop's records reuse a few
    regions and their slices (tape/sweeps/arenas.py recycles them). Its views hold the arenas: drop() before one is
    given back (arenas.recycle counts references)."""

    __slots__ = ("arenas", "views")

    def __init__(self) -> None:
        self.drop()

    def drop(self) -> None:
        self.arenas: list[np.ndarray | None] = [None, None]
        self.views: list[dict[tuple, np.ndarray]] = [{}, {}]

    def of(self, s: State, arena: np.ndarray) -> dict[tuple, np.ndarray] | None:
        """The views of arena, s's value or adjoint arena (None for another)."""
        k = 0 if arena is s._aval else 1 if arena is s._aadj else -1
        if k >= 0 and (self.arenas[k] is not arena or len(self.views[k]) >= KEPT):
            self.arenas[k], self.views[k] = arena, {}
        return self.views[k] if k >= 0 else None


def view(s: State, arena: np.ndarray, v: View) -> np.ndarray:
    """The elements of v in an arena (no copy). A Function, whose arenas never move, keeps the
    views of its two arenas (``_views``): building one costs about 1.5 µs, a lookup 0.1."""
    cache = getattr(s, "_views", None)
    if cache is not None and (arena is s._aval or arena is s._aadj):
        key = (v, arena is s._aval)
        found = cache.get(key)
        if found is None:
            found = cache[key] = _view(s, arena, v)
        return found
    return _view(s, arena, v)


@functools.lru_cache(maxsize=4096)
def _bytes(strides: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides in bytes (a view's, made at every read of it)."""
    return tuple(8 * k for k in strides)


def _view(s: State, arena: np.ndarray, v: View) -> np.ndarray:
    borrowed = getattr(s, "_borrowed", None)
    if borrowed and arena is s._aval and v.record in borrowed:  # a constant read in place (tape/sweeps/arenas.py)
        return np.ndarray(v.shape, np.float64, borrowed[v.record], 8 * v.offset, _bytes(v.strides))
    at = origin(s, arena, int(s._in0[v.record])) + v.offset
    views = kept(s, arena)
    if views is not None:
        return kept_view(views, arena, at, v.shape, v.strides)
    return np.ndarray(v.shape, np.float64, arena, 8 * at, _bytes(v.strides))


def schedule(s: State, stop: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(array record rows, elem rows, region offsets by plan) of records [0, stop); kept by a Function."""
    cache = getattr(s, "_schedules", None)
    if cache is not None and stop in cache:
        return cache[stop]
    op = s._op[:stop]
    found = (np.flatnonzero(IS_ARRAY[op]).tolist(), np.flatnonzero(op == ELEM), starts(s))
    if cache is not None:
        cache[stop] = found
    return found


def read(s: State, arena: np.ndarray, p: Plan) -> list[Any]:
    """The views p reads; a 0-d constant as a float (NumPy's fast paths: x ** 2.0 squares)."""
    views = kept(s, arena)
    if views is None or s._borrowed:
        return [float(arena[s._plans[s._in0[v.record]].offset + v.offset]) if not v.shape and
                s._op[v.record] == ACONSTANT else view(s, arena, v) for v in p.inputs]
    starts = [s._plans[s._in0_w[v.record]].offset + v.offset for v in p.inputs]  # a tape's: Python ints, kept views
    return [float(arena[k]) if not v.shape and s._op_w[v.record] == ACONSTANT else
            kept_view(views, arena, k, v.shape, v.strides) for v, k in zip(p.inputs, starts, strict=True)]


# -- forward ----------------------------------------------------------------------------


def forward_one(s: State, p: Plan) -> None:
    """Compute array record p's elements from its inputs (its rule's forward; the plumbing kinds here)."""
    rule = RULE[p.code]
    if rule.reads == "views":
        if p.inputs:  # a constant's values are set when it is recorded
            rule.forward(p, read(s, s._aval, p), own(s, s._aval, p))
    elif rule.reads == "callee":  # a Function (tape/function/call_records.py), as are its reverse and derivatives
        s._callees[p.places[0]]._call_forward(s, p)
    elif rule.reads == "elements":
        own(s, s._aval, p).reshape(-1)[...] = region(s._aval, s._plans[s._in0[p.inputs[0].record]]).reshape(-1)[
            p.places]
    elif rule.reads == "scalars":
        own(s, s._aval, p).reshape(-1)[...] = s._val[p.places]


try:  # NumPy 2's errstate is a context variable: set by a token in 0.14 µs, where a with np.errstate block takes 0.9
    from numpy._core import _ufunc_config

    _ERRORS = getattr(_ufunc_config, "_extobj_contextvar", None)
except ImportError:  # pragma: no cover
    _ERRORS = None
with np.errstate(all="ignore"):
    _IGNORED = _ERRORS.get() if _ERRORS is not None else None


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with no floating-point warning, as every sweep: for a record as it is recorded, a tape's reverse
    sweep."""
    if _ERRORS is None:  # pragma: no cover (NumPy 1)
        with np.errstate(all="ignore"):
            return fn(*args)
    token = _ERRORS.set(_IGNORED)
    try:
        return fn(*args)
    finally:
        _ERRORS.reset(token)


def forward_recorded(s: State, p: Plan) -> None:
    """forward_one for the record a tape is recording, with no floating-point warning (as every sweep)."""
    quietly(forward_one, s, p)


def starts(s: State, back: bool = False) -> np.ndarray:
    """Each plan's first element in the value arena, or (back) in the adjoint arena (origin's)."""
    at = getattr(s, "_back_at", None) if back else None
    return np.array([p.offset for p in s._plans], np.int64) if at is None else at


def elements(s: State, rows: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Where in the arenas the elements that elem records ``rows`` read are (offsets: schedule's)."""
    return offsets[s._in0[s._in0[rows]]] + s._in1[rows]


_IS_LEAF = IS_LEAF.tolist()
SCALARS, RUN, RECORD = 0, 1, 2  # what a walk gives: a stretch of scalar records, a fused run, an array record


def forward(s: State, start: int, stop: int, runs: dict[int, Any] | None = None) -> None:
    """Recompute records [start, stop): Numba over each scalar stretch, NumPy per array record,
    and fused runs (tape/sweeps/fusion.py; ``runs`` by first row) in one Numba pass each."""
    with np.errstate(all="ignore"):
        for kind, what in forward_walk(s, start, stop, runs):
            if kind == RECORD:
                forward_one(s, s._plans[s._in0[what]])
            elif kind == RUN:
                what.forward(s)
            else:
                scalars_forward(s, *what)


def forward_walk(s: State, start: int, stop: int, runs: dict[int, Any] | None) -> Iterator[tuple[int, Any]]:
    """The forward sweep of records [start, stop) in order: (SCALARS, scalars_forward's arguments after s),
    (RUN, run) or (RECORD, row); tape/sweeps/steps.py keeps a Function's as calls."""
    rows, elems, offsets = schedule(s, stop)
    arrays = [i for i in rows if i >= start] if start else rows
    lo = start
    done, dead = -1, frozenset[int]()  # the last row of the fused run in progress, the dead records inside it
    for i in [*arrays, stop]:
        if lo < i:
            reading = elems[np.searchsorted(elems, lo):np.searchsorted(elems, i)]
            yield SCALARS, (reading, elements(s, reading, offsets), lo, i)
        if runs and i in runs:
            yield RUN, runs[i]
            done, dead = runs[i].rows[-1], runs[i].dead
        elif i < stop and (i > done or i in dead):
            yield RECORD, i
        lo = i + 1


def scalars_forward(s: State, reading: np.ndarray, places: np.ndarray, lo: int, hi: int) -> None:
    """Records [lo, hi), scalar records all, by Numba; the elem records among them (reading) take their values."""
    s._val[reading] = s._aval[places]
    if not _leaves(s, lo, hi):
        forward_scalars(s._op, s._in0, s._in1, s._val, s._consts, lo, hi)


def forward_scalars(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, val: np.ndarray, consts: np.ndarray,
                    lo: int, hi: int) -> None:
    """Scalar records [lo, hi) by Numba: forward_sweep, and forward_range from the grouped record it stopped
    at, if any (a program without grouped ops then never compiles their rules: 1-1.5 s of a first hvp)."""
    at = forward_sweep(op, in0, in1, val, consts, lo, hi)
    if at >= 0:
        forward_range(op, in0, in1, val, consts, at, hi)


def _leaves(s: State, lo: int, hi: int) -> bool:
    """Whether records [lo, hi) are a few leaf, constant and elem records, where the scalar kernels would do nothing:
    an array program's stretches between array records often are, and never compile them (4 s of a first gradient)."""
    return hi - lo <= 8 and all(map(_IS_LEAF.__getitem__, s._op[lo:hi].tolist()))  # (by a list: 4.3 -> 2.5 µs, wrapped)


# -- reverse ----------------------------------------------------------------------------


def stale(stamp: int, gen: int, keep: int, accumulates: bool) -> bool:
    """Whether an adjoint stamped ``stamp`` is stale in generation gen (an accumulated input's, stamped since keep,
    is not)."""
    return not (stamp == gen or (accumulates and stamp >= keep))


def _fresh(s: State, j: int, gen: int, keep: int) -> bool:
    """Whether record j's adjoint is stale in generation gen."""
    return stale(s._stamp[j], gen, keep, s._op[j] in (LEAF, INPUT))


def _prepared(s: State, j: int, gen: int, keep: int) -> np.ndarray:
    """Record j's adjoint region, zeroed first if it was stale; stamped gen."""
    target = own(s, s._aadj, s._plans[s._in0[j]])
    if _fresh(s, j, gen, keep):
        target[...] = 0.0
        s._stamp[j] = gen
    return target


def accumulate(s: State, v: View, c: np.ndarray, gen: int, keep: int) -> None:
    """adjoint[v] += c (c summed back over broadcast axes first), by the stamp rule."""
    c = unbroadcast(c, v.shape)
    j = v.record
    if _fresh(s, j, gen, keep):
        p = s._plans[s._in0[j]]
        if v == whole(j, p):  # covers the region: assign (+ 0.0 turns -0.0 into +0.0, as a zeroed adjoint would)
            np.add(c, 0.0, out=own(s, s._aadj, p))
            s._stamp[j] = gen
            return
        _prepared(s, j, gen, keep)
    target = view(s, s._aadj, v)
    target += c


def scalar_accumulate(s: State, rows: np.ndarray, values: np.ndarray, gen: int, keep: int) -> None:
    """adj[rows] += values for scalar records by their stamps (zero values send nothing)."""
    sent = values != 0.0
    rows, values = rows[sent], values[sent]
    stamp = s._stamp[rows]
    stale = (stamp != gen) & ~((stamp >= keep) & (s._op[rows] == LEAF))
    s._adj[rows[stale]] = 0.0
    s._stamp[rows] = gen
    np.add.at(s._adj, rows, values)


def _wants(s: State, v: View) -> bool:
    return s._op[v.record] != ACONSTANT


def reverse_one(s: State, p: Plan, gen: int, keep: int, check: bool = True) -> None:
    """Send array record p's adjoint to its inputs (check: see kernels.array_rule.times)."""
    rule = RULE[p.code]
    if not rule.derivative:
        return
    if rule.reads == "callee":
        s._callees[p.places[0]]._call_reverse(s, p, gen, keep)
        return
    g = own(s, s._aadj, p)
    if rule.reads == "scalars":
        scalar_accumulate(s, p.places, g.reshape(-1), gen, keep)
    elif rule.reads == "elements":
        if _wants(s, p.inputs[0]):
            sent = g.reshape(-1) != 0.0
            np.add.at(_prepared(s, p.inputs[0].record, gen, keep).reshape(-1), p.places[sent],
                      g.reshape(-1)[sent])
    else:
        sends = rule.vjp(p, g, read(s, s._aval, p), own(s, s._aval, p), check)
        for v, contribution in zip(p.inputs, sends, strict=True):
            if contribution is not None and _wants(s, v):  # a constant's contribution is never computed
                accumulate(s, v, contribution(), gen, keep)


ONE_BY_ONE = 4  # elem records, at most, that _elems_back sends one by one (an MLP's one output: 7.6 -> 2.0 µs)


def _elems_back(s: State, rows: np.ndarray, offsets: np.ndarray, gen: int, keep: int) -> None:
    """Elem records in rows send their adjoints (where this pass reached them) to their elements; a few one by one as
    np.add.at adds them (in their order back; in Python floats, which warn of nothing)."""
    if len(rows) <= ONE_BY_ONE:
        stamp, adj, aadj, in0 = s._stamp, s._adj, s._aadj, s._in0
        for row in reversed(rows.tolist()):
            if stamp[row] == gen and (a := float(adj[row])) != 0.0:
                j = int(in0[row])
                _prepared(s, j, gen, keep)
                place = int(offsets[in0[j]] + s._in1[row])
                aadj[place] = float(aadj[place]) + a
        return
    rows = rows[(s._stamp[rows] == gen) & (s._adj[rows] != 0.0)][::-1]
    if not len(rows):  # none reached (the outputs of a call that only the next call reads, say)
        return
    for j in set(s._in0[rows].tolist()):
        _prepared(s, j, gen, keep)
    np.add.at(s._aadj, elements(s, rows, offsets), s._adj[rows])


def reverse(s: State, top: int, gen: int, keep: int, check: bool = True, runs: dict[int, Any] | None = None,
            tables: Callable[[Iterator[tuple[int, Any]]], Iterator[tuple[int, Any]]] | None = None) -> int:
    """The reverse sweep in generation gen from record top down (seeds already in place).

    check=False leaves out the NaN test of each product (kernels.array_rule.times): a caller that
    finds no NaN in what it reads afterwards has the same numbers, else it sweeps again checking.
    ``runs``: fused runs by last row (tape/sweeps/fusion.py; their kernels hold the rule themselves).
    ``tables``: the walk with stretches of records as items of another kind, each a call (gen, keep, check) -> whether
    it left products unchecked (tape/sweeps/compiled.py's tables).
    Returns how many array records with a derivative went through NumPy (0: nothing was left unchecked)."""
    return quietly(_reverse, s, top, gen, keep, check, runs, tables)


def _reverse(s: State, top: int, gen: int, keep: int, check: bool, runs: dict[int, Any] | None,
             tables: Callable[[Iterator[tuple[int, Any]]], Iterator[tuple[int, Any]]] | None) -> int:
    numpy_records = 0
    walk = reverse_walk(s, top, runs)
    for kind, what in tables(walk) if tables else walk:
        if kind == RECORD:
            if s._stamp[what] == gen:
                reverse_one(s, s._plans[s._in0[what]], gen, keep, check)
                numpy_records += 1
        elif kind == RUN:
            what.reverse(s, gen, keep)
        elif kind == SCALARS:
            reading, offsets, lo, hi = what
            scalars_reverse(s, reading, offsets, lo, hi, gen, keep)
        else:
            numpy_records += what(gen, keep, check)
    return numpy_records


def reverse_walk(s: State, top: int, runs: dict[int, Any] | None) -> Iterator[tuple[int, Any]]:
    """The reverse sweep from record top down, in order: (SCALARS, scalars_reverse's arguments between s and
    gen), (RUN, run) or (RECORD, row) of an array record with a derivative; tape/sweeps/steps.py keeps a
    Function's as calls."""
    arrays, elems, offsets = schedule(s, top + 1)
    offsets = offsets if getattr(s, "_back_at", None) is None else s._back_at  # (where elem records' adjoints go)
    hi = top + 1
    done = top + 1  # the first row of the fused run in progress
    for i in [*arrays[::-1], -1]:
        if i + 1 < hi:
            yield SCALARS, (elems[np.searchsorted(elems, i + 1):np.searchsorted(elems, hi)], offsets, i + 1, hi)
        if runs and i in runs:
            yield RUN, runs[i]
            done = runs[i].rows[0]
        elif 0 <= i < done and RULE[s._op[i]].derivative:
            yield RECORD, i
        hi = i


def scalars_reverse(s: State, reading: np.ndarray, offsets: np.ndarray, lo: int, hi: int, gen: int, keep: int) -> None:
    """Records [lo, hi), scalar records all, by Numba; the elem records among them (reading) send their adjoints."""
    if not _leaves(s, lo, hi):
        reverse_range(s._op, s._in0, s._in1, s._val, s._adj, s._stamp, s._consts, lo, hi, gen, keep)
    _elems_back(s, reading, offsets, gen, keep)


def seed(s: State, row: int, weights: Any, gen: int, keep: int) -> None:
    """Add weights to record row's adjoint (an array record's region, or a scalar record)."""
    if s._op[row] >= ARRAY_BASE:
        p = s._plans[s._in0[row]]
        w = np.asarray(weights, np.float64)  # a scalar, or the record's elements in C order (flat or shaped)
        accumulate(s, whole(row, p), np.broadcast_to(w, p.shape) if w.ndim == 0 else w.reshape(p.shape), gen, keep)
    elif weights != 0.0:  # one scalar record: the stamp rule of scalar_accumulate, written out
        fresh = s._stamp[row] != gen and not (s._stamp[row] >= keep and s._op[row] == LEAF)
        s._adj[row] = float(weights) + (0.0 if fresh else s._adj[row])
        s._stamp[row] = gen
